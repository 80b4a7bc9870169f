//! The protobuf wire format: varints, keys, length-delimited fields, and skipping what we do
//! not know. Every read is bounds-checked; nothing here can panic on hostile input.

use super::Failure;

/// Wire type of a varint (int32, int64, bool, enum).
pub(crate) const VARINT: u8 = 0;
/// Wire type of an 8-byte little-endian value (double, fixed64).
pub(crate) const FIXED64: u8 = 1;
/// Wire type of a length-delimited value (string, bytes, message, packed repeated).
pub(crate) const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
/// Wire type of a 4-byte little-endian value (float, fixed32).
pub(crate) const FIXED32: u8 = 5;

/// Nested groups skipped inside one unknown field before the input counts as hostile.
const MAX_GROUP_DEPTH: usize = 64;

pub(crate) fn wire_type_name(wire_type: u8) -> &'static str {
    match wire_type {
        VARINT => "varint",
        FIXED64 => "64-bit",
        LEN => "length-delimited",
        START_GROUP => "start-group",
        END_GROUP => "end-group",
        FIXED32 => "32-bit",
        _ => "invalid",
    }
}

/// A cursor over one message's bytes.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub(crate) fn varint(&mut self) -> Result<u64, Failure> {
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&byte) = self.buf.get(self.pos) else {
                return Err(Failure::new("truncated varint"));
            };
            self.pos += 1;
            if i == 9 && byte > 1 {
                return Err(Failure::new("varint overflows 64 bits"));
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err(Failure::new("varint longer than 10 bytes"))
    }

    /// A field key: (field number, wire type).
    pub(crate) fn key(&mut self) -> Result<(u32, u8), Failure> {
        let key = self.varint()?;
        let wire_type = (key & 7) as u8;
        let tag = key >> 3;
        if tag == 0 || tag > u64::from(u32::MAX >> 3) {
            return Err(Failure::new(format!("invalid field number {tag}")));
        }
        Ok((tag as u32, wire_type))
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Failure> {
        let left = self.buf.len() - self.pos;
        if n > left {
            return Err(Failure::new(format!(
                "{what} of {n} bytes runs past the end of the message ({left} bytes left)"
            )));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub(crate) fn fixed64(&mut self) -> Result<[u8; 8], Failure> {
        let bytes = self.take(8, "64-bit value")?;
        let mut out = [0u8; 8];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    pub(crate) fn fixed32(&mut self) -> Result<[u8; 4], Failure> {
        let bytes = self.take(4, "32-bit value")?;
        let mut out = [0u8; 4];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// The payload of a length-delimited field.
    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], Failure> {
        let len = self.varint()?;
        let len = usize::try_from(len).map_err(|_| Failure::new("absurd length"))?;
        self.take(len, "length-delimited field")
    }

    /// Skips the value of a field we have no schema for (forward compatibility).
    pub(crate) fn skip(&mut self, wire_type: u8) -> Result<(), Failure> {
        match wire_type {
            VARINT => self.varint().map(drop),
            FIXED64 => self.fixed64().map(drop),
            LEN => self.bytes().map(drop),
            FIXED32 => self.fixed32().map(drop),
            START_GROUP => self.skip_group(),
            END_GROUP => Err(Failure::new("end-group without a start-group")),
            other => Err(Failure::new(format!("invalid wire type {other}"))),
        }
    }

    fn skip_group(&mut self) -> Result<(), Failure> {
        let mut depth = 1usize;
        while depth > 0 {
            if self.is_empty() {
                return Err(Failure::new("unterminated group"));
            }
            let (_, wire_type) = self.key()?;
            match wire_type {
                START_GROUP => {
                    depth += 1;
                    if depth > MAX_GROUP_DEPTH {
                        return Err(Failure::new("groups nested too deeply"));
                    }
                }
                END_GROUP => depth -= 1,
                other => self.skip(other)?,
            }
        }
        Ok(())
    }
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

pub(crate) fn put_key(out: &mut Vec<u8>, tag: u32, wire_type: u8) {
    put_varint(out, (u64::from(tag) << 3) | u64::from(wire_type));
}

pub(crate) fn put_bytes(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    put_key(out, tag, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        for value in [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX, (-1i64) as u64] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            let mut reader = Reader::new(&out);
            assert_eq!(reader.varint().unwrap(), value);
            assert!(reader.is_empty());
        }
    }

    #[test]
    fn bad_varints_are_errors() {
        assert!(Reader::new(&[0x80, 0x80]).varint().is_err());
        assert!(Reader::new(&[0xff; 11]).varint().is_err());
        let mut ten = [0xffu8; 10];
        ten[9] = 0x02;
        assert!(Reader::new(&ten).varint().is_err());
    }

    #[test]
    fn lengths_past_the_end_are_errors() {
        let mut reader = Reader::new(&[0x05, 1, 2]);
        let err = reader.bytes().unwrap_err();
        assert!(err.reason.contains("runs past the end"), "{}", err.reason);
        let mut huge = Vec::new();
        put_varint(&mut huge, u64::MAX);
        assert!(Reader::new(&huge).bytes().is_err());
    }

    #[test]
    fn groups_are_skipped() {
        // field 1 start-group, field 2 varint 5, field 1 end-group, then field 3 varint 7.
        let input = [0x0b, 0x10, 0x05, 0x0c, 0x18, 0x07];
        let mut reader = Reader::new(&input);
        let (tag, wire_type) = reader.key().unwrap();
        assert_eq!((tag, wire_type), (1, START_GROUP));
        reader.skip(wire_type).unwrap();
        assert_eq!(reader.key().unwrap(), (3, VARINT));
        assert!(Reader::new(&[0x0b, 0x10, 0x05]).skip(START_GROUP).is_err());
    }
}
