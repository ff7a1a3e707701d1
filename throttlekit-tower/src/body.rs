//! The response body of the layer's service: the inner service's body, or one the layer made
//! itself (the 429 problem details). `Inner.body` is the inner service's body; `Full.data` is
//! what is left to send. (pin-project-lite accepts no doc comments on enum fields, hence the
//! module-level `allow`.)
#![allow(missing_docs)]

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

pin_project! {
    /// Either the wrapped service's body or a complete body built by the layer.
    #[project = BodyProj]
    pub enum ResponseBody<B> {
        /// The inner service answered.
        Inner { #[pin] body: B },
        /// The layer answered (a denial or an error), with this whole body.
        Full { data: Option<Bytes> },
    }
}

impl<B> ResponseBody<B> {
    pub(crate) fn full(data: impl Into<Bytes>) -> ResponseBody<B> {
        let data: Bytes = data.into();
        ResponseBody::Full { data: if data.is_empty() { None } else { Some(data) } }
    }
}

impl<B: Body<Data = Bytes>> Body for ResponseBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        match self.project() {
            BodyProj::Inner { body } => body.poll_frame(cx),
            BodyProj::Full { data } => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ResponseBody::Inner { body } => body.is_end_stream(),
            ResponseBody::Full { data } => data.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ResponseBody::Inner { body } => body.size_hint(),
            ResponseBody::Full { data } => SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64)),
        }
    }
}
