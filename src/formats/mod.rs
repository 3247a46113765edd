//! Weight formats: the registry, host codecs, transcode and GGUF block decoders.
