-- The records (by id) of an org's API keys.
-- KEYS[1] the org's key ids (set)
-- ARGV[1] the by-id records' key prefix
-- Returns an array of HGETALL answers (flat field, value lists).
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
	local h = redis.call('HGETALL', ARGV[1] .. id)
	if #h > 0 then out[#out + 1] = h end
end
return out
