-- Revokes an API key: both its records and its id among its org's keys.
-- KEYS[1] the record by id (hash)
-- ARGV[1] the by-hash records' key prefix, ARGV[2] the store's key prefix
-- with its ':', ARGV[3] the key id
-- Returns 1 revoked, 0 no such key.
local h = redis.call('HGET', KEYS[1], 'hash')
if not h then return 0 end
local org = redis.call('HGET', KEYS[1], 'org')
redis.call('DEL', ARGV[1] .. h)
redis.call('DEL', KEYS[1])
redis.call('SREM', ARGV[2] .. '{' .. org .. '}:keys', ARGV[3])
return 1
