-- Sets fields of a sandbox's record when every expected field holds.
-- KEYS[1] the record (hash)
-- ARGV[1] n, the number of expected pairs; ARGV[2 .. 1 + 2n] field, value
-- pairs that must all hold (a missing field reads ''); then the field,
-- value pairs to set.
-- Returns -1 no record, 0 an expectation failed (nothing set), 1 applied.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local n = tonumber(ARGV[1])
for i = 0, n - 1 do
	local v = redis.call('HGET', KEYS[1], ARGV[2 + 2 * i]) or ''
	if v ~= ARGV[3 + 2 * i] then return 0 end
end
if #ARGV > 1 + 2 * n then redis.call('HSET', KEYS[1], unpack(ARGV, 2 + 2 * n)) end
return 1
