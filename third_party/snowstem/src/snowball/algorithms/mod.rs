//! Algorithm modules produced by the Snowball compiler's Rust backend.
//!
//! Do not edit these files by hand. They are generated from the pinned
//! Snowball compiler release.

macro_rules! generated {
    ($($name:ident),* $(,)?) => {
        $(
            #[rustfmt::skip]
            #[allow(clippy::all)]
            #[allow(unused_assignments, unused_labels, unreachable_code)]
            pub mod $name;
        )*
    };
}

generated! {
    english,
}
