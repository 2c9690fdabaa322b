#!/usr/bin/env bash
# Steps per second of small decoder shapes on one core (bench/studies/train_speed.sh). Run from the root.
exec bash bench/studies/train_speed.sh "$@"
