# simulate: a week of the example config on a virtual clock.
case_ simulate 0 simulate --config examples/surecron.yaml --from 2026-11-23T00:00:00Z --until 2026-11-30T00:00:00Z --fail summary@2026-11-27T08:00:00Z..2026-11-27T10:00:00Z
