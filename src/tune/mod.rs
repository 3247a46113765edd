//! tune
