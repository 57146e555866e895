-- One page of an org's sandbox index, newest first (ZREVRANGE's order:
-- score, then member, both descending), strictly after a (score, id).
-- KEYS[1] the index (zset)
-- ARGV[1] the score after which, ARGV[2] the id after which ('' = from
-- the newest), ARGV[3] at most this many
-- Returns flat member, score pairs.
local max = tonumber(ARGV[3])
if ARGV[2] == '' then return redis.call('ZREVRANGE', KEYS[1], 0, max - 1, 'WITHSCORES') end
local s = tonumber(ARGV[1])
local c = redis.call('ZCOUNT', KEYS[1], ARGV[1], ARGV[1])
local r = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[1], '-inf', 'WITHSCORES', 'LIMIT', 0, c + max)
local out = {}
for i = 1, #r, 2 do
	if #out >= 2 * max then break end
	if tonumber(r[i + 1]) < s or r[i] < ARGV[2] then
		out[#out + 1] = r[i]; out[#out + 1] = r[i + 1]
	end
end
return out
