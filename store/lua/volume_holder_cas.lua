-- Compare-and-set of a volume's holder.
-- KEYS[1] the volume's record (hash)
-- ARGV[1] the holder it must have, ARGV[2] the new holder
-- Returns {0} set, {1, holder} it had another, {2} no record.
if redis.call('EXISTS', KEYS[1]) == 0 then return {2} end
local h = redis.call('HGET', KEYS[1], 'holder') or ''
if h ~= ARGV[1] then return {1, h} end
redis.call('HSET', KEYS[1], 'holder', ARGV[2])
return {0}
