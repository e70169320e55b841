//! The narrow core of a shard: what storage, the verbs' storage calls and the resource
//! strategies work on. It holds no feature state, so it can be built on a temporary store
//! for in-process tests, and modules that take it do not depend on the whole shard.

use crate::registry::Registry;
use store::Store;

/// The narrow core that storage and resource strategies work on: the object store and
/// the resource table. It knows nothing of the shard's features, so storage can be run
/// (and unit-tested) on a temporary store without the rest of a shard.
pub struct Core {
    /// The object store.
    pub store: Store,
    /// The served resources, each row with its strategy.
    pub registry: Registry,
}
