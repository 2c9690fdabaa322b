#!/usr/bin/env bash
# Initialization and formation where induction heads form (bench/studies/formation_inits.sh). Run from the root.
exec bash bench/studies/formation_inits.sh "$@"
