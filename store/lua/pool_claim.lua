-- Takes the warm container that lives longest from a pool, dropping those
-- that end too soon, and counts the claim.
-- KEYS[1] the pool (zset: member -> expiry, ms), KEYS[2] its claim count
-- ARGV[1] the least expiry (ms) a container may have
-- Returns the member, or false (nil) when the pool has none.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local m = redis.call('ZPOPMAX', KEYS[1])
if #m == 0 then return false end
redis.call('INCR', KEYS[2])
return m[1]
