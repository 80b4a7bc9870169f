//! SPDY/3.1 as Kubernetes streaming uses it (`kubectl port-forward`, and `kubectl exec`,
//! `attach` and `cp` up to 1.29): the frames, the zlib-compressed header blocks, and a server
//! session that turns a byte stream into independent streams opened by the client. What runs
//! on the streams is [`crate::portforward`]'s and [`crate::remotecommand::spdy`]'s.
//!
//! What the peer is: `github.com/moby/spdystream` inside client-go. That library shapes what is
//! implemented here:
//!
//! - Header blocks are compressed with zlib and SPDY/3's dictionary, one compression context
//!   per direction for the whole connection, each block ending with a sync flush.
//! - spdystream neither sends `WINDOW_UPDATE` nor honours one, and sends no `SETTINGS`: it
//!   writes data frames as fast as its connection takes them. So this session enforces no
//!   send window and sends no window updates either (a peer enforcing SPDY/3's 64 KiB default
//!   window would stall; spdystream never does). Back-pressure comes from the connection
//!   itself: a stream's reader that does not keep up stops this session reading, as with
//!   spdystream's own frame workers.
//! - Client streams have odd ids, rising; anything else is refused with `RST_STREAM
//!   PROTOCOL_ERROR`. `PING`s with the client's parity are echoed; `SETTINGS`,
//!   `WINDOW_UPDATE` and unknown control frames are read and ignored, and `HEADERS` only
//!   count for their `FIN`. A `GOAWAY` stops new streams; the open ones finish.
//!
//! Start at [`serve`]; [`Frame`], [`encode`] and [`FrameReader`] are the wire format.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

/// The protocol version in every control frame.
pub const VERSION: u16 = 3;

/// Control frame types.
pub mod kind {
    pub const SYN_STREAM: u16 = 1;
    pub const SYN_REPLY: u16 = 2;
    pub const RST_STREAM: u16 = 3;
    pub const SETTINGS: u16 = 4;
    pub const PING: u16 = 6;
    pub const GOAWAY: u16 = 7;
    pub const HEADERS: u16 = 8;
    pub const WINDOW_UPDATE: u16 = 9;
}

/// `FLAG_FIN`: the sender's last frame on the stream (data and stream control frames).
pub const FLAG_FIN: u8 = 0x01;
/// `FLAG_UNIDIRECTIONAL` on `SYN_STREAM`: the receiver may not send on the stream.
pub const FLAG_UNIDIRECTIONAL: u8 = 0x02;

/// `RST_STREAM` status codes.
pub mod status {
    pub const PROTOCOL_ERROR: u32 = 1;
    pub const INVALID_STREAM: u32 = 2;
    pub const REFUSED_STREAM: u32 = 3;
    pub const CANCEL: u32 = 5;
    pub const INTERNAL_ERROR: u32 = 6;
}

/// The largest frame payload the 24-bit length field can carry.
pub const MAX_PAYLOAD: usize = 0x00ff_ffff;

/// A decompressed header block larger than this ends the session (a header bomb).
const MAX_HEADER_BLOCK: usize = 1 << 20;

/// The data frames this session writes carry at most this much.
const DATA_CHUNK: usize = 32 * 1024;

/// A header block: lower-case names, values as sent (several values are NUL-separated).
pub type Headers = Vec<(String, String)>;

/// The first value of a header, if the block has it.
pub fn header<'a>(headers: &'a Headers, name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.split('\0').next().unwrap_or(""))
}

/// One `SETTINGS` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    pub flags: u8,
    pub id: u32,
    pub value: u32,
}

/// A SPDY/3 frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    Data {
        stream_id: u32,
        fin: bool,
        data: Bytes,
    },
    SynStream {
        stream_id: u32,
        associated_to: u32,
        priority: u8,
        fin: bool,
        unidirectional: bool,
        headers: Headers,
    },
    SynReply {
        stream_id: u32,
        fin: bool,
        headers: Headers,
    },
    RstStream {
        stream_id: u32,
        status: u32,
    },
    Settings {
        entries: Vec<Setting>,
    },
    Ping {
        id: u32,
    },
    GoAway {
        last_good_stream_id: u32,
        status: u32,
    },
    Headers {
        stream_id: u32,
        fin: bool,
        headers: Headers,
    },
    WindowUpdate {
        stream_id: u32,
        delta: u32,
    },
    /// A control frame of a type SPDY/3 does not define (skipped, as the spec says).
    Unknown {
        kind: u16,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("SPDY header compression: {0}")]
    Compression(String),
    #[error("malformed SPDY frame: {0}")]
    Malformed(String),
}

fn malformed(what: impl Into<String>) -> Error {
    Error::Malformed(what.into())
}

// ---------------------------------------------------------------------------------------
// Header compression

/// The zlib dictionary of SPDY/3 (draft-mbelshe-httpbis-spdy-00 2.6.10.1): length-prefixed
/// words, then a run of common status lines, dates and media types.
pub fn dictionary() -> &'static [u8] {
    static DICTIONARY: OnceLock<Vec<u8>> = OnceLock::new();
    DICTIONARY.get_or_init(|| {
        const WORDS: &[&str] = &[
            "options",
            "head",
            "post",
            "put",
            "delete",
            "trace",
            "accept",
            "accept-charset",
            "accept-encoding",
            "accept-language",
            "accept-ranges",
            "age",
            "allow",
            "authorization",
            "cache-control",
            "connection",
            "content-base",
            "content-encoding",
            "content-language",
            "content-length",
            "content-location",
            "content-md5",
            "content-range",
            "content-type",
            "date",
            "etag",
            "expect",
            "expires",
            "from",
            "host",
            "if-match",
            "if-modified-since",
            "if-none-match",
            "if-range",
            "if-unmodified-since",
            "last-modified",
            "location",
            "max-forwards",
            "pragma",
            "proxy-authenticate",
            "proxy-authorization",
            "range",
            "referer",
            "retry-after",
            "server",
            "te",
            "trailer",
            "transfer-encoding",
            "upgrade",
            "user-agent",
            "vary",
            "via",
            "warning",
            "www-authenticate",
            "method",
            "get",
            "status",
            "200 OK",
            "version",
            "HTTP/1.1",
            "url",
            "public",
            "set-cookie",
            "keep-alive",
            "origin",
        ];
        const TAIL: &[&str] = &[
            "100101201202205206300302303304305306307402405406407408409410411412413414415416417",
            "502504505",
            "203 Non-Authoritative Information",
            "204 No Content",
            "301 Moved Permanently",
            "400 Bad Request",
            "401 Unauthorized",
            "403 Forbidden",
            "404 Not Found",
            "500 Internal Server Error",
            "501 Not Implemented",
            "503 Service Unavailable",
            "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec",
            " 00:00:00",
            " Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT",
            "chunked,text/html,image/png,image/jpg,image/gif,application/xml,",
            "application/xhtml+xml,text/plain,text/javascript,public",
            "privatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.",
        ];
        let mut dictionary = Vec::with_capacity(1423);
        for word in WORDS {
            dictionary.extend_from_slice(&(word.len() as u32).to_be_bytes());
            dictionary.extend_from_slice(word.as_bytes());
        }
        for part in TAIL {
            dictionary.extend_from_slice(part.as_bytes());
        }
        dictionary
    })
}

/// The uncompressed form of a header block: a count, then length-prefixed names and values.
fn header_block(headers: &Headers) -> Vec<u8> {
    let mut block = Vec::new();
    block.put_u32(headers.len() as u32);
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        block.put_u32(name.len() as u32);
        block.put_slice(name.as_bytes());
        block.put_u32(value.len() as u32);
        block.put_slice(value.as_bytes());
    }
    block
}

fn parse_header_block(mut block: &[u8]) -> Result<Headers, Error> {
    fn string(block: &mut &[u8]) -> Result<String, Error> {
        if block.remaining() < 4 {
            return Err(malformed("truncated header block"));
        }
        let len = block.get_u32() as usize;
        if block.remaining() < len {
            return Err(malformed("truncated header block"));
        }
        let text = String::from_utf8_lossy(&block[..len]).into_owned();
        block.advance(len);
        Ok(text)
    }
    if block.remaining() < 4 {
        return Err(malformed("truncated header block"));
    }
    let count = block.get_u32() as usize;
    let mut headers = Vec::with_capacity(count.min(64));
    for _ in 0..count {
        let name = string(&mut block)?.to_ascii_lowercase();
        let value = string(&mut block)?;
        headers.push((name, value));
    }
    Ok(headers)
}

/// The compressing side of one direction of a connection.
pub struct HeaderEncoder {
    zlib: Compress,
}

impl Default for HeaderEncoder {
    fn default() -> Self {
        Self::new()
    }
}

impl HeaderEncoder {
    pub fn new() -> HeaderEncoder {
        let mut zlib = Compress::new(Compression::default(), true);
        zlib.set_dictionary(dictionary()).expect("a fresh zlib stream takes a dictionary");
        HeaderEncoder { zlib }
    }

    /// The compressed block, ending with a sync flush so the peer can decode it at once.
    pub fn encode(&mut self, headers: &Headers) -> Vec<u8> {
        let input = header_block(headers);
        let mut out = Vec::with_capacity(input.len() + 64);
        let mut consumed = 0;
        loop {
            if out.capacity() - out.len() < 64 {
                out.reserve(256);
            }
            let before = self.zlib.total_in();
            self.zlib
                .compress_vec(&input[consumed..], &mut out, FlushCompress::Sync)
                .expect("deflate of an in-memory buffer");
            consumed += (self.zlib.total_in() - before) as usize;
            // Done once all input is in and the flush did not fill the output.
            if consumed == input.len() && out.len() < out.capacity() {
                return out;
            }
        }
    }
}

/// The decompressing side of one direction of a connection.
pub struct HeaderDecoder {
    zlib: Decompress,
}

impl Default for HeaderDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl HeaderDecoder {
    pub fn new() -> HeaderDecoder {
        HeaderDecoder { zlib: Decompress::new(true) }
    }

    /// Decodes the next compressed block of the connection.
    pub fn decode(&mut self, mut compressed: &[u8]) -> Result<Headers, Error> {
        let mut out = Vec::with_capacity(compressed.len() * 4 + 64);
        loop {
            if out.capacity() - out.len() < 256 {
                out.reserve(out.capacity().max(1024));
            }
            let (in_before, out_before) = (self.zlib.total_in(), self.zlib.total_out());
            if let Err(e) = self.zlib.decompress_vec(compressed, &mut out, FlushDecompress::Sync) {
                match e.needs_dictionary() {
                    Some(_) => {
                        self.zlib
                            .set_dictionary(dictionary())
                            .map_err(|e| Error::Compression(e.to_string()))?;
                    }
                    None => return Err(Error::Compression(e.to_string())),
                }
            }
            let used = (self.zlib.total_in() - in_before) as usize;
            compressed = &compressed[used..];
            if compressed.is_empty() && out.len() < out.capacity() {
                break;
            }
            if out.len() > MAX_HEADER_BLOCK {
                return Err(Error::Compression("header block too large".into()));
            }
            let produced = self.zlib.total_out() - out_before;
            if used == 0 && produced == 0 && out.len() < out.capacity() {
                return Err(Error::Compression("header block does not decompress".into()));
            }
        }
        parse_header_block(&out)
    }
}

// ---------------------------------------------------------------------------------------
// Frames

fn control_header(out: &mut Vec<u8>, kind: u16, flags: u8, length: usize) {
    out.put_u16(0x8000 | VERSION);
    out.put_u16(kind);
    out.put_u32((u32::from(flags) << 24) | (length as u32 & 0x00ff_ffff));
}

/// Appends the frame's bytes to `out`, compressing header blocks with `headers`.
pub fn encode(frame: &Frame, encoder: &mut HeaderEncoder, out: &mut Vec<u8>) {
    let fin_flag = |fin: bool| if fin { FLAG_FIN } else { 0 };
    match frame {
        Frame::Data { stream_id, fin, data } => {
            debug_assert!(data.len() <= MAX_PAYLOAD);
            out.put_u32(stream_id & 0x7fff_ffff);
            out.put_u32((u32::from(fin_flag(*fin)) << 24) | data.len() as u32);
            out.put_slice(data);
        }
        Frame::SynStream { stream_id, associated_to, priority, fin, unidirectional, headers } => {
            let block = encoder.encode(headers);
            let flags = fin_flag(*fin) | if *unidirectional { FLAG_UNIDIRECTIONAL } else { 0 };
            control_header(out, kind::SYN_STREAM, flags, 10 + block.len());
            out.put_u32(stream_id & 0x7fff_ffff);
            out.put_u32(associated_to & 0x7fff_ffff);
            out.put_u8((priority & 0x07) << 5);
            out.put_u8(0);
            out.put_slice(&block);
        }
        Frame::SynReply { stream_id, fin, headers } => {
            let block = encoder.encode(headers);
            control_header(out, kind::SYN_REPLY, fin_flag(*fin), 4 + block.len());
            out.put_u32(stream_id & 0x7fff_ffff);
            out.put_slice(&block);
        }
        Frame::Headers { stream_id, fin, headers } => {
            let block = encoder.encode(headers);
            control_header(out, kind::HEADERS, fin_flag(*fin), 4 + block.len());
            out.put_u32(stream_id & 0x7fff_ffff);
            out.put_slice(&block);
        }
        Frame::RstStream { stream_id, status } => {
            control_header(out, kind::RST_STREAM, 0, 8);
            out.put_u32(stream_id & 0x7fff_ffff);
            out.put_u32(*status);
        }
        Frame::Settings { entries } => {
            control_header(out, kind::SETTINGS, 0, 4 + 8 * entries.len());
            out.put_u32(entries.len() as u32);
            for e in entries {
                out.put_u32((u32::from(e.flags) << 24) | (e.id & 0x00ff_ffff));
                out.put_u32(e.value);
            }
        }
        Frame::Ping { id } => {
            control_header(out, kind::PING, 0, 4);
            out.put_u32(*id);
        }
        Frame::GoAway { last_good_stream_id, status } => {
            control_header(out, kind::GOAWAY, 0, 8);
            out.put_u32(last_good_stream_id & 0x7fff_ffff);
            out.put_u32(*status);
        }
        Frame::WindowUpdate { stream_id, delta } => {
            control_header(out, kind::WINDOW_UPDATE, 0, 8);
            out.put_u32(stream_id & 0x7fff_ffff);
            out.put_u32(delta & 0x7fff_ffff);
        }
        Frame::Unknown { .. } => {}
    }
}

/// Takes one whole frame off the front of `buf`, or `None` until enough bytes are there.
pub fn decode(buf: &mut BytesMut, decoder: &mut HeaderDecoder) -> Result<Option<Frame>, Error> {
    if buf.len() < 8 {
        return Ok(None);
    }
    let word = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let flags = buf[4];
    let length = u32::from_be_bytes([0, buf[5], buf[6], buf[7]]) as usize;
    if buf.len() < 8 + length {
        buf.reserve(8 + length - buf.len());
        return Ok(None);
    }
    buf.advance(8);
    let mut payload = buf.split_to(length).freeze();
    let fin = flags & FLAG_FIN != 0;
    if word & 0x8000_0000 == 0 {
        let stream_id = word & 0x7fff_ffff;
        if stream_id == 0 {
            return Err(malformed("data frame on stream 0"));
        }
        return Ok(Some(Frame::Data { stream_id, fin, data: payload }));
    }
    let frame_kind = (word & 0xffff) as u16;
    let need = |n: usize, payload: &Bytes| -> Result<(), Error> {
        if payload.len() < n {
            Err(malformed(format!("control frame {frame_kind} is {} bytes", payload.len())))
        } else {
            Ok(())
        }
    };
    let frame = match frame_kind {
        kind::SYN_STREAM => {
            need(10, &payload)?;
            let stream_id = payload.get_u32() & 0x7fff_ffff;
            let associated_to = payload.get_u32() & 0x7fff_ffff;
            let priority = payload.get_u8() >> 5;
            let _slot = payload.get_u8();
            let headers = decoder.decode(&payload)?;
            Frame::SynStream {
                stream_id,
                associated_to,
                priority,
                fin,
                unidirectional: flags & FLAG_UNIDIRECTIONAL != 0,
                headers,
            }
        }
        kind::SYN_REPLY | kind::HEADERS => {
            need(4, &payload)?;
            let stream_id = payload.get_u32() & 0x7fff_ffff;
            let headers = decoder.decode(&payload)?;
            if frame_kind == kind::SYN_REPLY {
                Frame::SynReply { stream_id, fin, headers }
            } else {
                Frame::Headers { stream_id, fin, headers }
            }
        }
        kind::RST_STREAM => {
            need(8, &payload)?;
            Frame::RstStream {
                stream_id: payload.get_u32() & 0x7fff_ffff,
                status: payload.get_u32(),
            }
        }
        kind::SETTINGS => {
            need(4, &payload)?;
            let count = payload.get_u32() as usize;
            need(count.saturating_mul(8), &payload)?;
            let entries = (0..count)
                .map(|_| {
                    let flag_id = payload.get_u32();
                    Setting {
                        flags: (flag_id >> 24) as u8,
                        id: flag_id & 0x00ff_ffff,
                        value: payload.get_u32(),
                    }
                })
                .collect();
            Frame::Settings { entries }
        }
        kind::PING => {
            need(4, &payload)?;
            Frame::Ping { id: payload.get_u32() }
        }
        kind::GOAWAY => {
            need(4, &payload)?;
            let last_good_stream_id = payload.get_u32() & 0x7fff_ffff;
            let status = if payload.remaining() >= 4 { payload.get_u32() } else { 0 };
            Frame::GoAway { last_good_stream_id, status }
        }
        kind::WINDOW_UPDATE => {
            need(8, &payload)?;
            Frame::WindowUpdate {
                stream_id: payload.get_u32() & 0x7fff_ffff,
                delta: payload.get_u32() & 0x7fff_ffff,
            }
        }
        other => Frame::Unknown { kind: other },
    };
    Ok(Some(frame))
}

/// Reads frames off one direction of a connection.
pub struct FrameReader<R> {
    io: R,
    buf: BytesMut,
    decoder: HeaderDecoder,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(io: R) -> FrameReader<R> {
        FrameReader { io, buf: BytesMut::with_capacity(64 * 1024), decoder: HeaderDecoder::new() }
    }

    /// The next frame; `None` when the connection ends between frames.
    pub async fn next(&mut self) -> Result<Option<Frame>, Error> {
        loop {
            if let Some(frame) = decode(&mut self.buf, &mut self.decoder)? {
                return Ok(Some(frame));
            }
            if self.buf.capacity() - self.buf.len() < 4096 {
                self.buf.reserve(64 * 1024);
            }
            if self.io.read_buf(&mut self.buf).await? == 0 {
                if self.buf.is_empty() {
                    return Ok(None);
                }
                return Err(Error::Io(std::io::ErrorKind::UnexpectedEof.into()));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The server session

/// A stream the client opened and this session accepted (its `SYN_REPLY` is on its way).
pub struct NewStream {
    pub id: u32,
    pub headers: Headers,
    /// The client's data, in order; ends with the client's `FIN`, its reset, or the end of
    /// the session. Dropping it discards whatever else the client sends on the stream.
    pub data: mpsc::Receiver<Bytes>,
    /// Turns true when the client resets the stream or the connection ends.
    pub reset: watch::Receiver<bool>,
    pub writer: StreamWriter,
}

/// The session ended: nothing more can be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the SPDY connection is closed")]
pub struct Closed;

/// Sends on one stream.
#[derive(Clone)]
pub struct StreamWriter {
    id: u32,
    frames: mpsc::Sender<Frame>,
}

impl StreamWriter {
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Sends data (in frames of at most 32 KiB).
    pub async fn write(&self, mut data: Bytes) -> Result<(), Closed> {
        while !data.is_empty() {
            let chunk = data.split_to(data.len().min(DATA_CHUNK));
            let frame = Frame::Data { stream_id: self.id, fin: false, data: chunk };
            self.frames.send(frame).await.map_err(|_| Closed)?;
        }
        Ok(())
    }

    /// Half-closes the stream: this side sends no more.
    pub async fn finish(&self) -> Result<(), Closed> {
        let frame = Frame::Data { stream_id: self.id, fin: true, data: Bytes::new() };
        self.frames.send(frame).await.map_err(|_| Closed)
    }

    /// Resets the stream (both directions end).
    pub async fn reset(&self, status: u32) -> Result<(), Closed> {
        let frame = Frame::RstStream { stream_id: self.id, status };
        self.frames.send(frame).await.map_err(|_| Closed)
    }
}

/// What the session keeps per open stream.
struct StreamEntry {
    data: Option<mpsc::Sender<Bytes>>,
    reset: watch::Sender<bool>,
}

impl StreamEntry {
    /// The client finished sending and whoever took the stream has let go of it.
    fn done(&self) -> bool {
        self.data.is_none() && self.reset.is_closed()
    }
}

/// How long the session waits, after the client's side ended, for the streams' last frames
/// to be written.
const DRAIN: Duration = Duration::from_secs(10);

/// Serves one SPDY connection as the server: each stream the client opens is checked with
/// `accept` (an error refuses it with `RST_STREAM`, as spdystream's stream handler does),
/// answered with an empty `SYN_REPLY` and handed to `streams`. Returns when the connection
/// has ended in both directions.
pub async fn serve<IO, A>(io: IO, accept: A, streams: mpsc::Sender<NewStream>) -> Result<(), Error>
where
    IO: AsyncRead + AsyncWrite + Send + 'static,
    A: FnMut(&Headers) -> Result<(), String> + Send,
{
    let (read, write) = tokio::io::split(io);
    let (frames, outgoing) = mpsc::channel::<Frame>(64);
    let mut writer = tokio::spawn(write_frames(write, outgoing));
    let result = read_frames(FrameReader::new(read), frames, accept, streams).await;
    // The streams were told the connection ended: once they let go, the writer ends.
    match tokio::time::timeout(DRAIN, &mut writer).await {
        Ok(Ok(Err(e))) => tracing::debug!(error = %e, "SPDY connection: write ended"),
        Ok(_) => {}
        Err(_) => writer.abort(),
    }
    result
}

async fn write_frames<W: AsyncWrite + Unpin>(
    mut io: W,
    mut frames: mpsc::Receiver<Frame>,
) -> Result<(), Error> {
    let mut encoder = HeaderEncoder::new();
    let mut buf = Vec::with_capacity(128 * 1024);
    while let Some(frame) = frames.recv().await {
        buf.clear();
        encode(&frame, &mut encoder, &mut buf);
        // Whatever else is queued goes out in the same write.
        while buf.len() < 64 * 1024 {
            match frames.try_recv() {
                Ok(frame) => encode(&frame, &mut encoder, &mut buf),
                Err(_) => break,
            }
        }
        io.write_all(&buf).await?;
        io.flush().await?;
    }
    let _ = io.shutdown().await;
    Ok(())
}

async fn read_frames<R, A>(
    mut reader: FrameReader<R>,
    frames: mpsc::Sender<Frame>,
    mut accept: A,
    streams: mpsc::Sender<NewStream>,
) -> Result<(), Error>
where
    R: AsyncRead + Unpin,
    A: FnMut(&Headers) -> Result<(), String>,
{
    let mut open: HashMap<u32, StreamEntry> = HashMap::new();
    // The next stream id the client may use (ids are odd and rise).
    let mut next_id: u32 = 1;
    let mut gone_away = false;
    let result = loop {
        let frame = match reader.next().await {
            Ok(Some(frame)) => frame,
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        };
        match frame {
            Frame::SynStream { stream_id, fin, headers, .. } => {
                open.retain(|_, entry| !entry.done());
                if gone_away {
                    let _ = frames.send(rst(stream_id, status::REFUSED_STREAM)).await;
                    continue;
                }
                if stream_id % 2 == 0 || stream_id < next_id || stream_id > 0x7fff_ffff {
                    let _ = frames.send(rst(stream_id, status::PROTOCOL_ERROR)).await;
                    continue;
                }
                next_id = stream_id.saturating_add(2);
                if let Err(why) = accept(&headers) {
                    tracing::debug!(stream_id, why, "SPDY stream refused");
                    let _ = frames.send(rst(stream_id, status::CANCEL)).await;
                    continue;
                }
                let reply = Frame::SynReply { stream_id, fin: false, headers: Vec::new() };
                if frames.send(reply).await.is_err() {
                    break Ok(());
                }
                let (data_tx, data) = mpsc::channel(16);
                let (reset_tx, reset) = watch::channel(false);
                let writer = StreamWriter { id: stream_id, frames: frames.clone() };
                let entry = StreamEntry { data: (!fin).then_some(data_tx), reset: reset_tx };
                open.insert(stream_id, entry);
                let stream = NewStream { id: stream_id, headers, data, reset, writer };
                if streams.send(stream).await.is_err() {
                    break Ok(());
                }
            }
            Frame::Data { stream_id, fin, data } => {
                let Some(entry) = open.get_mut(&stream_id) else { continue };
                if let Some(tx) = &entry.data {
                    // A reader that let go of the stream gets nothing more.
                    if !data.is_empty() && tx.send(data).await.is_err() {
                        entry.data = None;
                    }
                }
                if fin {
                    entry.data = None;
                }
            }
            Frame::RstStream { stream_id, .. } => {
                if let Some(entry) = open.remove(&stream_id) {
                    let _ = entry.reset.send(true);
                }
            }
            Frame::Ping { id } => {
                // Ours are even; the client's (odd) are echoed.
                if id % 2 == 1 && frames.send(Frame::Ping { id }).await.is_err() {
                    break Ok(());
                }
            }
            Frame::GoAway { .. } => {
                // No new streams; the open ones run to their end.
                gone_away = true;
            }
            Frame::Headers { fin: true, stream_id, .. } => {
                if let Some(entry) = open.get_mut(&stream_id) {
                    entry.data = None;
                }
            }
            Frame::SynReply { .. }
            | Frame::Headers { .. }
            | Frame::Settings { .. }
            | Frame::WindowUpdate { .. }
            | Frame::Unknown { .. } => {}
        }
    };
    // The client's side is over: every stream learns it.
    for (_, entry) in open.drain() {
        let _ = entry.reset.send(true);
    }
    result
}

fn rst(stream_id: u32, status: u32) -> Frame {
    Frame::RstStream { stream_id, status }
}

/// The client's side of a SPDY connection, for the tests of what serves one (the session
/// here, exec and attach in [`crate::remotecommand::spdy`], [`crate::portforward`]).
#[cfg(test)]
pub(crate) mod testing {
    use std::future::Future;

    use tokio::io::{DuplexStream, ReadHalf, WriteHalf};
    use tokio::task::JoinHandle;

    use super::*;

    /// How long a test waits for the server's next frame.
    const FRAME_TIMEOUT: Duration = Duration::from_secs(10);

    /// Header pairs as a header block.
    pub(crate) fn headers(pairs: &[(&str, &str)]) -> Headers {
        pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    /// A client, in frames, on an in-memory connection.
    pub(crate) struct Client {
        reader: FrameReader<ReadHalf<DuplexStream>>,
        write: WriteHalf<DuplexStream>,
        encoder: HeaderEncoder,
    }

    impl Client {
        /// Spawns `server` on the other end of a new in-memory connection.
        pub(crate) fn connect<F, Fut>(server: F) -> (Client, JoinHandle<Fut::Output>)
        where
            F: FnOnce(DuplexStream) -> Fut,
            Fut: Future + Send + 'static,
            Fut::Output: Send + 'static,
        {
            let (client, server_end) = tokio::io::duplex(1 << 16);
            let task = tokio::spawn(server(server_end));
            let (read, write) = tokio::io::split(client);
            let client =
                Client { reader: FrameReader::new(read), write, encoder: HeaderEncoder::new() };
            (client, task)
        }

        pub(crate) async fn send(&mut self, frame: Frame) {
            let mut out = Vec::new();
            encode(&frame, &mut self.encoder, &mut out);
            self.write.write_all(&out).await.unwrap();
        }

        /// Opens stream `id` with these headers (a `SYN_STREAM`; the reply is the caller's
        /// to read).
        pub(crate) async fn open(&mut self, id: u32, pairs: &[(&str, &str)]) {
            self.send(Frame::SynStream {
                stream_id: id,
                associated_to: 0,
                priority: 0,
                fin: false,
                unidirectional: false,
                headers: headers(pairs),
            })
            .await;
        }

        /// The server's next frame; the connection must still be open.
        pub(crate) async fn next(&mut self) -> Frame {
            tokio::time::timeout(FRAME_TIMEOUT, self.reader.next())
                .await
                .expect("a frame in time")
                .unwrap()
                .expect("the connection is open")
        }
    }

    /// A [`serve`] session with `accept` on an in-memory connection: the client, the streams
    /// it opens as the session hands them out, and the session's task.
    pub(crate) fn session(
        accept: impl FnMut(&Headers) -> Result<(), String> + Send + 'static,
    ) -> (Client, mpsc::Receiver<NewStream>, JoinHandle<Result<(), Error>>) {
        let (tx, rx) = mpsc::channel(8);
        let (client, task) = Client::connect(|io| serve(io, accept, tx));
        (client, rx, task)
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{headers, session};
    use super::*;

    fn roundtrip(frame: Frame) {
        let (mut enc, mut dec) = (HeaderEncoder::new(), HeaderDecoder::new());
        let mut bytes = Vec::new();
        encode(&frame, &mut enc, &mut bytes);
        let mut buf = BytesMut::from(&bytes[..]);
        // Every prefix is "not yet".
        for cut in [0, 1, 7, bytes.len().saturating_sub(1)] {
            if cut < bytes.len() {
                let mut partial = BytesMut::from(&bytes[..cut]);
                assert_eq!(decode(&mut partial, &mut HeaderDecoder::new()).unwrap(), None);
            }
        }
        assert_eq!(decode(&mut buf, &mut dec).unwrap(), Some(frame));
        assert!(buf.is_empty());
    }

    #[test]
    fn the_dictionary_is_spdy3s() {
        let dict = dictionary();
        assert_eq!(dict.len(), 1423);
        assert_eq!(&dict[..11], b"\0\0\0\x07options");
        assert!(dict.ends_with(b",*,enq=0."));
        // The id a zlib stream names its dictionary by (FDICT): SPDY/3's is e3c6a7c2.
        let adler = Compress::new(Compression::default(), true).set_dictionary(dict).unwrap();
        assert_eq!(adler, 0xe3c6_a7c2);
    }

    #[test]
    fn every_frame_roundtrips() {
        roundtrip(Frame::Data { stream_id: 3, fin: false, data: Bytes::from_static(b"hello") });
        roundtrip(Frame::Data { stream_id: 0x7fff_ffff, fin: true, data: Bytes::new() });
        roundtrip(Frame::SynStream {
            stream_id: 1,
            associated_to: 0,
            priority: 7,
            fin: false,
            unidirectional: true,
            headers: headers(&[("streamtype", "error"), ("port", "8080"), ("requestid", "0")]),
        });
        roundtrip(Frame::SynReply { stream_id: 5, fin: true, headers: Vec::new() });
        roundtrip(Frame::Headers { stream_id: 5, fin: false, headers: headers(&[("a", "b")]) });
        roundtrip(Frame::RstStream { stream_id: 9, status: status::CANCEL });
        roundtrip(Frame::Settings {
            entries: vec![
                Setting { flags: 1, id: 7, value: 65536 },
                Setting { flags: 0, id: 4, value: 100 },
            ],
        });
        roundtrip(Frame::Ping { id: 1 });
        roundtrip(Frame::GoAway { last_good_stream_id: 11, status: 0 });
        roundtrip(Frame::WindowUpdate { stream_id: 3, delta: 1 << 20 });
    }

    #[test]
    fn control_frames_are_laid_out_as_spdy3() {
        let mut out = Vec::new();
        encode(&Frame::Ping { id: 0x0102_0304 }, &mut HeaderEncoder::new(), &mut out);
        assert_eq!(out, [0x80, 0x03, 0x00, 0x06, 0x00, 0x00, 0x00, 0x04, 1, 2, 3, 4]);
        out.clear();
        let rst = Frame::RstStream { stream_id: 3, status: status::CANCEL };
        encode(&rst, &mut HeaderEncoder::new(), &mut out);
        assert_eq!(out, [0x80, 0x03, 0x00, 0x03, 0, 0, 0, 8, 0, 0, 0, 3, 0, 0, 0, 5]);
        out.clear();
        let data = Frame::Data { stream_id: 1, fin: true, data: Bytes::from_static(b"ab") };
        encode(&data, &mut HeaderEncoder::new(), &mut out);
        assert_eq!(out, [0, 0, 0, 1, 0x01, 0, 0, 2, b'a', b'b']);
    }

    /// Blocks as a C zlib compressor with SPDY/3's dictionary made them (Python's
    /// `zlib.compressobj(zdict=...)` with a sync flush after each), one context for both:
    /// `{"port": "8080", "streamtype": "error"}` then `{"port": "8080", "streamtype": "data"}`.
    const FIRST: &str =
        "78f9e3c6a7c202e50e48f95b044eea16061606e0745752949a980b2d5a585341010f000000ffff";
    const SECOND: &str = "224a29a8144a04000000ffff";

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn header_blocks_decode_with_one_context_per_direction() {
        let mut dec = HeaderDecoder::new();
        assert_eq!(
            dec.decode(&hex(FIRST)).unwrap(),
            headers(&[("port", "8080"), ("streamtype", "error")])
        );
        // The second block refers back into the first: only the same context decodes it.
        assert_eq!(
            dec.decode(&hex(SECOND)).unwrap(),
            headers(&[("port", "8080"), ("streamtype", "data")])
        );
        assert!(HeaderDecoder::new().decode(&hex(SECOND)).is_err());
    }

    #[test]
    fn our_blocks_name_the_dictionary_and_share_context() {
        let mut enc = HeaderEncoder::new();
        let first = enc.encode(&headers(&[("port", "8080"), ("streamtype", "error")]));
        // zlib header with FDICT and the dictionary's id.
        assert_eq!(first[0] & 0x0f, 8);
        assert_ne!(first[1] & 0x20, 0);
        assert_eq!(&first[2..6], &0xe3c6_a7c2u32.to_be_bytes());
        assert!(first.ends_with(&[0, 0, 0xff, 0xff]), "sync flushed");
        let second = enc.encode(&headers(&[("port", "8080"), ("streamtype", "data")]));
        assert!(second.len() < first.len());
        let mut dec = HeaderDecoder::new();
        assert_eq!(header(&dec.decode(&first).unwrap(), "streamtype"), Some("error"));
        assert_eq!(header(&dec.decode(&second).unwrap(), "streamtype"), Some("data"));
        // Empty blocks (spdystream's replies) too.
        assert_eq!(dec.decode(&enc.encode(&Vec::new())).unwrap(), Vec::new());
    }

    #[test]
    fn garbage_headers_are_an_error_not_a_panic() {
        assert!(HeaderDecoder::new().decode(b"not zlib at all").is_err());
        let mut buf = BytesMut::from(&[0x80, 3, 0, 1, 0, 0, 0, 2, 0, 0][..]);
        assert!(decode(&mut buf, &mut HeaderDecoder::new()).is_err());
    }

    #[tokio::test]
    async fn a_session_replies_echoes_pings_and_carries_data_both_ways() {
        let (mut client, mut streams, session) = session(|h| match header(h, "streamtype") {
            Some("data") | Some("error") => Ok(()),
            _ => Err("invalid stream type".into()),
        });
        client
            .send(Frame::Settings { entries: vec![Setting { flags: 0, id: 7, value: 1 << 16 }] })
            .await;
        client.open(1, &[("streamtype", "error"), ("port", "80")]).await;
        assert_eq!(
            client.next().await,
            Frame::SynReply { stream_id: 1, fin: false, headers: Vec::new() }
        );
        let mut error = streams.recv().await.unwrap();
        assert_eq!(header(&error.headers, "streamtype"), Some("error"));
        // kubectl closes its side of the error stream at once.
        client.send(Frame::Data { stream_id: 1, fin: true, data: Bytes::new() }).await;
        assert_eq!(error.data.recv().await, None);

        client.open(3, &[("streamtype", "data"), ("port", "80")]).await;
        assert!(matches!(client.next().await, Frame::SynReply { stream_id: 3, .. }));
        let mut data = streams.recv().await.unwrap();
        client.send(Frame::Ping { id: 1 }).await;
        assert_eq!(client.next().await, Frame::Ping { id: 1 });
        client.send(Frame::WindowUpdate { stream_id: 3, delta: 100 }).await;
        client.send(Frame::Data { stream_id: 3, fin: false, data: "GET /".into() }).await;
        assert_eq!(data.data.recv().await.unwrap(), Bytes::from("GET /"));

        // A large answer arrives whole, in frames of at most 32 KiB, with no window updates
        // asked of the client.
        let big: Bytes = (0..200_000u32).map(|i| (i % 251) as u8).collect::<Vec<_>>().into();
        let writer = data.writer.clone();
        let sent = big.clone();
        tokio::spawn(async move {
            writer.write(sent).await.unwrap();
            writer.finish().await.unwrap();
        });
        let mut got = Vec::new();
        loop {
            match client.next().await {
                Frame::Data { stream_id: 3, fin, data } => {
                    assert!(data.len() <= 32 * 1024);
                    got.extend_from_slice(&data);
                    if fin {
                        break;
                    }
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(got, big);

        // A message on the error stream, then the client resets the data stream.
        error.writer.write("boom".into()).await.unwrap();
        error.writer.finish().await.unwrap();
        assert_eq!(
            client.next().await,
            Frame::Data { stream_id: 1, fin: false, data: "boom".into() }
        );
        assert_eq!(client.next().await, Frame::Data { stream_id: 1, fin: true, data: "".into() });
        client.send(Frame::RstStream { stream_id: 3, status: status::CANCEL }).await;
        data.reset.wait_for(|r| *r).await.unwrap();

        // A refused stream: reset, never handed out. A stream id going backwards: protocol error.
        client.open(5, &[("streamtype", "bogus"), ("port", "80")]).await;
        assert_eq!(client.next().await, Frame::RstStream { stream_id: 5, status: status::CANCEL });
        client.open(3, &[("streamtype", "data"), ("port", "80")]).await;
        assert_eq!(
            client.next().await,
            Frame::RstStream { stream_id: 3, status: status::PROTOCOL_ERROR }
        );

        // The client goes: the streams learn it, the session ends.
        drop((error, data));
        drop(client);
        let ended = tokio::time::timeout(Duration::from_secs(5), session).await.unwrap();
        assert!(ended.unwrap().is_ok());
        assert!(streams.recv().await.is_none());
    }

    #[tokio::test]
    async fn an_open_stream_learns_that_the_connection_ended() {
        let (mut client, mut streams, session) = session(|_| Ok(()));
        client.open(1, &[("streamtype", "data"), ("port", "80")]).await;
        let mut stream = streams.recv().await.unwrap();
        let _ = client.next().await;
        drop(client);
        tokio::time::timeout(Duration::from_secs(5), stream.reset.wait_for(|r| *r))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stream.data.recv().await, None);
        drop(stream);
        tokio::time::timeout(Duration::from_secs(15), session).await.unwrap().unwrap().unwrap();
    }
}
