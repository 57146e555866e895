-- Deletes a volume's record and its place in the org's index when its
-- holder is the expected one (or it has none).
-- KEYS[1] the record (hash), KEYS[2] the org's index (zset)
-- ARGV[1] the holder it must have, ARGV[2] the id
-- Returns 0 deleted (or absent), 1 it had another holder.
local h = redis.call('HGET', KEYS[1], 'holder')
if h and h ~= ARGV[1] then return 1 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return 0
