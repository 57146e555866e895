-- Frees each of the volumes a sandbox holds.
-- KEYS the volumes' records (hashes)
-- ARGV[1] the sandbox
-- Returns 0.
for _, k in ipairs(KEYS) do
	if redis.call('HGET', k, 'holder') == ARGV[1] then
		redis.call('HSET', k, 'holder', '')
	end
end
return 0
