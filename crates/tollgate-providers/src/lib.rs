//! Everything that talks to model providers:
//!
//! - [`table`]: one table of provider defaults (base URL, auth header, key env vars, quirks) for
//!   OpenAI and the providers that speak its dialect, selected by the `provider/` prefix of a
//!   LiteLLM `litellm_params.model`.
//! - [`deployment`]: a ready-to-call deployment (resolved base URL, precomputed auth header,
//!   request defaults, timeouts).
//! - [`client`]: the one pooled upstream HTTP client (keep-alive, HTTP/2 via ALPN, TCP_NODELAY),
//!   with separate connect / first-byte / idle-gap / total timeouts and a response size bound.
//! - `h1`: the HTTP/1.1 exchange the client runs for plain `http://` upstreams in the
//!   request's own task.
//! - [`upstream`]: the seam a request is answered through ([`Upstream`]): the HTTP client,
//!   or an answer made in process (the gateway's mock provider).
//! - [`clientside`] and [`egress`]: credentials and upstream hosts a client chooses in its
//!   request body, where the deployment allows it: which fields, which hosts (never this
//!   machine, a private network or a metadata service), and the addresses connected to.

pub mod client;
mod client_credentials;
pub mod clientside;
pub mod deployment;
pub mod egress;
mod h1;
mod pinned;
pub mod table;
pub mod upstream;
mod upstream_error;

pub use client::{UpstreamClient, UpstreamError, UpstreamResponse, bind_thread_to_shard};
pub use deployment::{Deployment, DeploymentError, DeploymentSpec, Timeouts};
pub use table::{AuthStyle, ProviderSpec, WireDialect, provider_spec};
pub use upstream::{LocalBody, Upstream, UpstreamRequest};
