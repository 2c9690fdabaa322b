#!/usr/bin/env bash
# Training throughput of the long study's shape on two cores (bench/studies/train_speed_cores.sh). Run from the root.
exec bash bench/studies/train_speed_cores.sh "$@"
