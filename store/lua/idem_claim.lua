-- Takes over a pending Idempotency-Key entry from the owner seen in it.
-- KEYS[1] the entry (hash)
-- ARGV[1] the owner seen, ARGV[2] the new owner, ARGV[3] its until (ms)
-- Returns 1 taken, 0 the entry is no longer pending or has another owner.
if redis.call('HGET', KEYS[1], 'state') ~= 'pending' or
	(redis.call('HGET', KEYS[1], 'owner') or '') ~= ARGV[1] then
	return 0
end
redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'until', ARGV[3])
return 1
