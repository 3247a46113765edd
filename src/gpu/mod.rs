//! gpu
