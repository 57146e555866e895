-- Compare-and-set of one org-scoped JSON record (snapshots).
-- KEYS[1] the org's records of one kind (hash: id -> JSON)
-- ARGV[1] the id, ARGV[2] the text it must have, ARGV[3] the new text
-- ('' deletes it)
-- Returns 0 applied, 1 absent or differed (nothing changed).
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur or cur ~= ARGV[2] then return 1 end
if ARGV[3] == '' then
	redis.call('HDEL', KEYS[1], ARGV[1])
else
	redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
end
return 0
