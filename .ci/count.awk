# Count the tests of a CI log: every ctest run (normal and ASan builds) and
# the fuzz targets. Prints "N passed, N failed, N skipped".
#
# ctest's summary "P% tests passed, F tests failed out of T" counts a skipped
# test (exit 77 with SKIP_RETURN_CODE, or disabled) as passed, so the skipped
# ones are read from their result lines ("Test  #4: name ....***Skipped") and
# taken out of the passed. A test whose program is missing ("***Not Run") is
# already among the failed.
/Test +#[0-9]+: .*\*\*\*(Skipped|Not Run \(Disabled\))/ { skipped++ }
match($0, /[0-9]+ tests failed out of [0-9]+/) {
    split(substr($0, RSTART, RLENGTH), w, " ")
    failed += w[1]
    total += w[6]
}
# tests/fuzz/run.sh: "fuzz: NAME ok (...)", "fuzz: NAME FAILED" or "fuzz: build failed"
/^fuzz: [^ ]+ ok/ { fuzz_ok++ }
/^fuzz: [^ ]+ FAILED/ { fuzz_failed++ }
# the fuzz targets did not build: one failure (none of them ran)
/^fuzz: build failed/ { fuzz_failed++ }
END {
    printf "%d passed, %d failed, %d skipped\n", total - failed - skipped + fuzz_ok,
           failed + fuzz_failed, skipped
}
