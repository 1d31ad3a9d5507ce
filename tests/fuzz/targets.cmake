# The libFuzzer targets, one per input reader (tests/fuzz/TARGET.cpp); scripts/fuzz.sh runs them.
set(DTWIN_FUZZ_TARGETS fuzz_scenario fuzz_profile fuzz_trace fuzz_schedule_text)
