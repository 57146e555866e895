-- The records of the given ids in that order; drops the index members
-- whose record expired.
-- KEYS[1] the org's index (zset)
-- ARGV[1] the records' key prefix, ARGV[2..] the ids
-- Returns an array of HGETALL answers (flat field, value lists).
local out = {}
for i = 2, #ARGV do
	local h = redis.call('HGETALL', ARGV[1] .. ARGV[i])
	if #h == 0 then redis.call('ZREM', KEYS[1], ARGV[i]) else out[#out + 1] = h end
end
return out
