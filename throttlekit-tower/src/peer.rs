//! Where the socket peer's address is found in a request's extensions.

use std::net::SocketAddr;

use http::Extensions;

/// The peer address: axum's `ConnectInfo<SocketAddr>` (from
/// `into_make_service_with_connect_info::<SocketAddr>()`), else a plain `SocketAddr` extension
/// (what a hyper server loop can insert itself).
pub(crate) fn peer_addr(extensions: &Extensions) -> Option<SocketAddr> {
    #[cfg(feature = "axum")]
    if let Some(axum::extract::ConnectInfo(addr)) = extensions.get::<axum::extract::ConnectInfo<SocketAddr>>() {
        return Some(*addr);
    }
    extensions.get::<SocketAddr>().copied()
}
