#!/usr/bin/env bash
# The long formation study (its arms, seeds and what is committed: bench/studies/long_study.sh). Run from the root.
exec bash bench/studies/long_study.sh "$@"
