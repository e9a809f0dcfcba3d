//! Recorded traces of real programs (DESIGN §4).
