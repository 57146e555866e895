-- Makes a sandbox the holder of several volumes, all or none.
-- KEYS the volumes' records (hashes)
-- ARGV[1] the sandbox, ARGV[1 + i] the holder KEYS[i] may have besides it
-- Returns {0} all claimed; {1, i} KEYS[i] absent; {2, i, holder} KEYS[i]
-- held by another. Nothing changes unless all are claimed.
for i, k in ipairs(KEYS) do
	if redis.call('EXISTS', k) == 0 then return {1, i} end
	local h = redis.call('HGET', k, 'holder') or ''
	if h ~= ARGV[1] and h ~= ARGV[i + 1] then return {2, i, h} end
end
for _, k in ipairs(KEYS) do redis.call('HSET', k, 'holder', ARGV[1]) end
return {0}
