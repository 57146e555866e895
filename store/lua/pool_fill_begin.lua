-- Whether a pool needs one more warm container, counting those being made;
-- when it does, counts one more being made (for 120 s at most).
-- KEYS[1] the pool (zset: member -> expiry, ms), KEYS[2] the number being
-- made (a string)
-- ARGV[1] the least expiry (ms) a container may have, ARGV[2] the pool's
-- size
-- Returns 1 make one, 0 the pool is full.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local have = redis.call('ZCARD', KEYS[1])
local busy = tonumber(redis.call('GET', KEYS[2]) or '0')
if have + busy >= tonumber(ARGV[2]) then return 0 end
redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], 120)
return 1
