//! Backend plumbing shared by every feature: the backend's state, settings, errors, SPI helpers, running as another
//! role, subtransactions, and the in-backend tests' helpers.

pub(crate) mod backend;
pub(crate) mod citus;
pub(crate) mod errors;
pub(crate) mod gucs;
pub(crate) mod identity;
pub(crate) mod key;
pub(crate) mod server_wide;
pub(crate) mod spi;
#[cfg(any(test, feature = "pg_test"))]
mod spi_tests;
pub(crate) mod subxact;
#[cfg(any(test, feature = "pg_test"))]
pub(crate) mod testing;
pub(crate) mod version;
