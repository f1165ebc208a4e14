//! What every sqlgate crate shares, below the evaluation core and the model client alike: the
//! kinds of failure ([`error`]), atomic writes and file stamps ([`files`]), the known secrets
//! redacted from every output ([`secrets`]), the interface of a text embedder ([`embed`]) and the
//! tokens a model server counted ([`usage`]).
//! It links no database driver, SQL parser or HTTP client, so a crate that needs only these
//! (the model client) builds none of them.

#![warn(missing_docs)]

pub mod embed;
pub mod error;
pub mod files;
pub mod secrets;
pub mod usage;
