//! What the gateway keeps in PostgreSQL for its clients, shared by every replica: MCP sessions
//! (who owns each, its handshake, its tool groups, when it was last used) and when each API key
//! was last used.

pub use crate::store::keys::touch as record_key_use;
pub use crate::store::mcp_sessions::{
    SessionOwner, StoredSession, bind, equip, expire, get, listen_ended, remove, save_handshake, still_open,
    touch,
};
