-- Deletes a sandbox's record and its place in the org's index.
-- KEYS[1] the record (hash), KEYS[2] the org's index (zset)
-- ARGV[1] the id
-- Returns 1.
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
