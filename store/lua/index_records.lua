-- The records a sorted-set index names, in its order; drops the members
-- whose record expired.
-- KEYS[1] the index (zset)
-- ARGV[1] at most this many, ARGV[2] the records' key prefix (the key of
-- a member's record is ARGV[2] .. member), ARGV[3] '1' newest first
-- (ZREVRANGE), '0' oldest first (ZRANGE)
-- Returns an array of HGETALL answers (flat field, value lists).
local range = ARGV[3] == '1' and 'ZREVRANGE' or 'ZRANGE'
local ids = redis.call(range, KEYS[1], 0, tonumber(ARGV[1]) - 1)
local out = {}
for _, id in ipairs(ids) do
	local h = redis.call('HGETALL', ARGV[2] .. id)
	if #h == 0 then redis.call('ZREM', KEYS[1], id) else out[#out + 1] = h end
end
return out
