-- A sandbox's record, written whole, and its place in the org's index.
-- KEYS[1] the record (hash), KEYS[2] the org's index (zset)
-- ARGV[1] ttl (s), ARGV[2] score, ARGV[3] id, ARGV[4..] field, value, ...
-- Returns 1.
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
return 1
