-- Records the answer of an Idempotency-Key entry's request.
-- KEYS[1] the entry (hash)
-- ARGV[1] the HTTP status, ARGV[2] the body, ARGV[3] how long the entry
-- lasts (s)
-- Returns 1.
redis.call('HSET', KEYS[1], 'state', 'done', 'status', ARGV[1], 'body', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
