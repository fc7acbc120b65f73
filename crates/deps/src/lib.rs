// pg_ask_deps has no code: its Cargo.toml asks for one set of features of every third-party crate.
