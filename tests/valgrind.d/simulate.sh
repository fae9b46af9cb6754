# simulate: a week of the example config on a virtual clock.
case_ simulate 0 simulate --config examples/surecron.yaml --from 2026-11-23T00:00:00Z --until 2026-11-30T00:00:00Z --fail summary@2026-11-27T08:00:00Z..2026-11-27T10:00:00Z
# A file target with an absolute path: simulate replaces it with its
# recorder (the path it frees must be the config's own heap copy).
sed "s|path: ./deliveries.jsonl|path: $tmp/deliveries.jsonl|" examples/surecron.yaml >"$tmp/abs.yaml"
cp -r examples/tasks "$tmp/"
case_ simulate-absolute-target 0 simulate --config "$tmp/abs.yaml" --from 2026-11-27T00:00:00Z --until 2026-11-28T00:00:00Z
