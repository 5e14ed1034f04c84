//! The one deserializer the wasm worker reads typed values with (the protocol's own parsing
//! included): from an owned `serde_json::Value`.
//!
//! serde generates each type's reading code once per deserializer, and that code is most of the
//! wasm's size. serde_json's own `Value` deserializer also accepts every struct written as an
//! array (`[1, "a"]` for `{x: 1, y: "a"}`), which doubles each struct's code for a form nothing
//! sends. This one reads structs from objects only and otherwise reads as serde_json does, with
//! its error type and messages ("invalid type: string \"a\", expected i32", "missing field `x`").

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, Expected, IntoDeserializer, MapAccess,
    SeqAccess, Unexpected, VariantAccess, Visitor,
};
use serde::forward_to_deserialize_any;
use serde_json::{Error, Map, Number, Value};

/// Reads `T` from `value`.
pub fn from_value<T: de::DeserializeOwned>(value: Value) -> Result<T, Error> {
    T::deserialize(De(value))
}

struct De(Value);

/// What serde's errors call `v` ("string \"a\"", "map", ...).
pub fn unexpected(v: &Value) -> Unexpected<'_> {
    match v {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(n) => number_unexpected(n),
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}

fn number_unexpected(n: &Number) -> Unexpected<'static> {
    if let Some(u) = n.as_u64() {
        Unexpected::Unsigned(u)
    } else if let Some(i) = n.as_i64() {
        Unexpected::Signed(i)
    } else {
        Unexpected::Float(n.as_f64().unwrap_or(f64::NAN))
    }
}

fn invalid(v: &Value, exp: &dyn Expected) -> Error {
    de::Error::invalid_type(unexpected(v), exp)
}

fn visit_number<'de, V: Visitor<'de>>(n: &Number, visitor: V) -> Result<V::Value, Error> {
    if let Some(u) = n.as_u64() {
        visitor.visit_u64(u)
    } else if let Some(i) = n.as_i64() {
        visitor.visit_i64(i)
    } else {
        visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
    }
}

fn visit_array<'de, V: Visitor<'de>>(a: Vec<Value>, visitor: V) -> Result<V::Value, Error> {
    let len = a.len();
    let mut seq = Seq(a.into_iter());
    let out = visitor.visit_seq(&mut seq)?;
    if seq.0.len() == 0 {
        Ok(out)
    } else {
        Err(de::Error::invalid_length(len, &"fewer elements in array"))
    }
}

fn visit_object<'de, V: Visitor<'de>>(
    o: Map<String, Value>,
    visitor: V,
) -> Result<V::Value, Error> {
    let len = o.len();
    let mut map = Entries {
        iter: o.into_iter(),
        value: None,
    };
    let out = visitor.visit_map(&mut map)?;
    if map.iter.len() == 0 {
        Ok(out)
    } else {
        Err(de::Error::invalid_length(len, &"fewer elements in map"))
    }
}

impl De {
    fn number<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self.0 {
            Value::Number(n) => visit_number(n, visitor),
            other => Err(invalid(other, &visitor)),
        }
    }

    fn string<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::String(s) => visitor.visit_string(s),
            other => Err(invalid(&other, &visitor)),
        }
    }

    fn object<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Object(o) => visit_object(o, visitor),
            other => Err(invalid(&other, &visitor)),
        }
    }

    fn array<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Array(a) => visit_array(a, visitor),
            other => Err(invalid(&other, &visitor)),
        }
    }
}

macro_rules! numbers {
    ($($f:ident)*) => {
        $(fn $f<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.number(visitor)
        })*
    };
}

impl<'de> Deserializer<'de> for De {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => visit_number(&n, visitor),
            Value::String(s) => visitor.visit_string(s),
            Value::Array(a) => visit_array(a, visitor),
            Value::Object(o) => visit_object(o, visitor),
        }
    }

    numbers!(deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
        deserialize_f32 deserialize_f64);

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Bool(b) => visitor.visit_bool(b),
            other => Err(invalid(&other, &visitor)),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.string(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.string(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.string(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.string(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            other => Err(invalid(&other, &visitor)),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.array(visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.array(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.array(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.object(visitor)
    }

    /// Objects only: no struct is ever sent as an array.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.object(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Value::String(s) => visitor.visit_enum(s.into_deserializer()),
            Value::Object(o) if o.len() == 1 => match o.into_iter().next() {
                Some((variant, value)) => visitor.visit_enum(Variant { variant, value }),
                None => Err(de::Error::custom("an enum as an empty map")),
            },
            Value::Object(_) => Err(de::Error::invalid_value(
                Unexpected::Map,
                &"map with a single key",
            )),
            other => Err(invalid(&other, &"string or map")),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }
}

struct Seq(std::vec::IntoIter<Value>);

impl<'de> SeqAccess<'de> for Seq {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        match self.0.next() {
            Some(v) => seed.deserialize(De(v)).map(Some),
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Entries {
    iter: serde_json::map::IntoIter,
    value: Option<Value>,
}

impl<'de> MapAccess<'de> for Entries {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        match self.iter.next() {
            Some((k, v)) => {
                self.value = Some(v);
                seed.deserialize(Key(k)).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.value.take() {
            Some(v) => seed.deserialize(De(v)),
            None => Err(de::Error::custom("value is missing")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// An object's key: a string, or a number written as one (maps keyed by integers).
struct Key(String);

macro_rules! key_integers {
    ($($f:ident $t:ty => $visit:ident)*) => {
        $(fn $f<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.0.parse::<$t>() {
                Ok(n) => visitor.$visit(n),
                Err(_) => Err(de::Error::invalid_type(Unexpected::Str(&self.0), &visitor)),
            }
        })*
    };
}

impl<'de> Deserializer<'de> for Key {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_string(self.0)
    }

    key_integers!(deserialize_i8 i64 => visit_i64 deserialize_i16 i64 => visit_i64
        deserialize_i32 i64 => visit_i64 deserialize_i64 i64 => visit_i64
        deserialize_u8 u64 => visit_u64 deserialize_u16 u64 => visit_u64
        deserialize_u32 u64 => visit_u64 deserialize_u64 u64 => visit_u64);

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_enum(self.0.into_deserializer())
    }

    forward_to_deserialize_any! {
        bool i128 u128 f32 f64 char str string bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

/// An enum written as `{"Variant": value}`.
struct Variant {
    variant: String,
    value: Value,
}

impl<'de> EnumAccess<'de> for Variant {
    type Error = Error;
    type Variant = De;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, De), Error> {
        Ok((seed.deserialize(Key(self.variant))?, De(self.value)))
    }
}

impl<'de> VariantAccess<'de> for De {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.0 {
            Value::Null => Ok(()),
            other => Err(invalid(&other, &"unit variant")),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        self.array(visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.object(visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::from_value;
    use serde::Deserialize;
    use serde_json::{json, Value};
    use std::collections::BTreeMap;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Args {
        tab_id: i32,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        ratio: f64,
        kind: Kind,
        #[serde(default)]
        list: Vec<u8>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Kind {
        Plain,
        Boxed(u32),
        Point { x: i64 },
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(tag = "type")]
    enum Tagged {
        A { n: u32 },
        B,
    }

    #[test]
    fn reads_what_serde_json_reads() {
        let v = json!({"tabId": 7, "name": "x", "ratio": 2, "kind": "plain", "list": [1, 2], "extra": null});
        assert_eq!(
            from_value::<Args>(v.clone()).unwrap(),
            serde_json::from_value::<Args>(v).unwrap()
        );
        let k: Kind = from_value(json!({"boxed": 3})).unwrap();
        assert_eq!(k, Kind::Boxed(3));
        let k: Kind = from_value(json!({"point": {"x": -4}})).unwrap();
        assert_eq!(k, Kind::Point { x: -4 });
        let t: Tagged = from_value(json!({"type": "A", "n": 1})).unwrap();
        assert_eq!(t, Tagged::A { n: 1 });
        let t: Tagged = from_value(json!({"type": "B"})).unwrap();
        assert_eq!(t, Tagged::B);
        let m: BTreeMap<u32, String> = from_value(json!({"1": "a", "20": "b"})).unwrap();
        assert_eq!(m[&20], "b");
        let v = json!({"a": [1, 2.5, "s", null, true, {"b": {}}]});
        assert_eq!(from_value::<Value>(v.clone()).unwrap(), v);
    }

    #[test]
    fn errors_read_as_serde_json_s() {
        for v in [
            json!({"tabId": "7", "kind": "plain"}),
            json!({"tabId": 1.5, "kind": "plain"}),
            json!({"tabId": 3000000000u64, "kind": "plain"}),
            json!({"kind": "plain"}),
            json!({"tabId": 1, "kind": "round"}),
            json!({"tabId": 1, "kind": "plain", "list": [300]}),
            json!({"tabId": 1, "kind": "plain", "name": 5}),
            json!("text"),
        ] {
            let ours = from_value::<Args>(v.clone()).unwrap_err().to_string();
            let theirs = serde_json::from_value::<Args>(v).unwrap_err().to_string();
            assert_eq!(ours, theirs);
        }
        let m = from_value::<BTreeMap<u32, String>>(json!({"x": "a"})).unwrap_err();
        assert!(m.to_string().contains("invalid type"), "{m}");
    }

    #[test]
    fn structs_come_from_objects_only() {
        let e = from_value::<Args>(json!([1, null, 0, "plain", []])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid type: sequence, expected struct Args"
        );
    }
}
