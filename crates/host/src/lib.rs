//! The real machine (DESIGN §9).
