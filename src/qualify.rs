//! qualify
