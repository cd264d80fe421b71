#!/usr/bin/env bash
# End-to-end: the short form of tests/fault_campaign.sh - four rounds on one
# database, each fault once (SIGKILL during submissions, a held write lock,
# a deleted WAL restored from the rescued copy, slow clients): every job
# answered 201 is there exactly once, /readyz is 200 after each round.
# Bounded: about 40 s. Environment: TIDE_BIN, TIDE_SRC. Exit 77 = skip.
exec bash "$(dirname "$0")/../fault_campaign.sh" --rounds 4
