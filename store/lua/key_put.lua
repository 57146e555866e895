-- An API key: its record by hash and by id, its org among the orgs, its
-- id among the org's keys.
-- KEYS[1] the record by hash, KEYS[2] the record by id (hashes), KEYS[3]
-- the orgs (set), KEYS[4] the org's key ids (set)
-- ARGV[1] org, ARGV[2] role, ARGV[3] key id, ARGV[4] createdAt (ms),
-- ARGV[5] the key's hash
-- Returns 1.
redis.call('HSET', KEYS[1], 'org', ARGV[1], 'role', ARGV[2], 'keyId', ARGV[3],
	'createdAt', ARGV[4])
redis.call('HSET', KEYS[2], 'hash', ARGV[5], 'org', ARGV[1], 'role', ARGV[2],
	'keyId', ARGV[3], 'createdAt', ARGV[4])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[3])
return 1
