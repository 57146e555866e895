-- Drops a pending Idempotency-Key entry its owner gives up.
-- KEYS[1] the entry (hash)
-- ARGV[1] the owner
-- Returns 1 (whether or not it was dropped).
if redis.call('HGET', KEYS[1], 'state') == 'pending' and
	(redis.call('HGET', KEYS[1], 'owner') or '') == ARGV[1] then
	redis.call('DEL', KEYS[1])
end
return 1
