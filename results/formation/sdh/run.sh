#!/usr/bin/env bash
# The slash-dense formation study: ARM=all or ARM=dense, SEEDS (default "0 1 2"); see README.md here.
exec bash bench/studies/sdh_study.sh "$@"
