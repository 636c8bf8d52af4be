#pragma once
// What every fuzz target checks its parser's promises with: a broken promise stops the run as a
// crash, which libFuzzer records with the input that caused it.

inline void require(bool ok) {
    if (!ok) __builtin_trap();
}
