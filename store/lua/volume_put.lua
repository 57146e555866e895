-- A new volume's record and its place in the org's index, within the
-- org's volume count.
-- KEYS[1] the record (hash), KEYS[2] the org's index (zset)
-- ARGV[1] score, ARGV[2] id, ARGV[3] the most volumes the org may have,
-- ARGV[4..] field, value, ...
-- Returns 0 made, 1 it existed (unchanged), 2 the org has its most.
if redis.call('EXISTS', KEYS[1]) == 1 then return 1 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return 2 end
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
return 0
