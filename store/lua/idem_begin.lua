-- Starts or reads an Idempotency-Key entry. A new entry is 'pending' for
-- the lease; the same payload again reads the entry.
-- KEYS[1] the entry (hash: state, payload, rid, owner, until, status, body)
-- ARGV[1] the payload's hash, ARGV[2] the lease (s), and the new entry's
-- ARGV[3] resource id, ARGV[4] owner, ARGV[5] until (ms)
-- Returns {'new'}, {'mismatch'} (another payload), {'pending', rid,
-- owner, until}, or {'done', status, body}.
local k = KEYS[1]
if redis.call('EXISTS', k) == 0 then
	redis.call('HSET', k, 'state', 'pending', 'payload', ARGV[1], 'rid', ARGV[3],
		'owner', ARGV[4], 'until', ARGV[5])
	redis.call('EXPIRE', k, ARGV[2])
	return {'new'}
end
if redis.call('HGET', k, 'payload') ~= ARGV[1] then return {'mismatch'} end
if redis.call('HGET', k, 'state') ~= 'done' then
	return {'pending', redis.call('HGET', k, 'rid') or '',
		redis.call('HGET', k, 'owner') or '', redis.call('HGET', k, 'until') or '0'}
end
return {'done', redis.call('HGET', k, 'status'), redis.call('HGET', k, 'body')}
