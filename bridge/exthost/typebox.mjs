// claude-rpc's stand-in for @sinclair/typebox and typebox (and the StringEnum
// of @earendil-works/pi-ai): the builders tool parameters use, making plain
// JSON Schema. Not covered: TypeBox's Kind symbols, Static checking, Value,
// TypeCompiler, Ref/Recursive, Codec, Refine, Transform, and the subpath
// modules (typebox/compile, typebox/value).
const optional = Symbol.for("claude-rpc.optional");

function plain(schema, options) {
  return Object.assign(schema, options || {});
}

function Optional(schema) {
  const s = Object.assign({}, schema);
  Object.defineProperty(s, optional, { value: true, enumerable: false });
  return s;
}

function Object_(properties, options) {
  const props = {};
  const required = [];
  for (const [k, v] of Object.entries(properties || {})) {
    props[k] = v;
    if (!(v && v[optional])) required.push(k);
  }
  const s = { type: "object", properties: props };
  if (required.length) s.required = required;
  return plain(s, options);
}

function literalType(v) {
  if (typeof v === "string") return "string";
  if (typeof v === "boolean") return "boolean";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return undefined;
}

function Enum(values, options) {
  // A TypeScript numeric enum maps names to numbers and numbers back to
  // names: only the values count.
  const list = Array.isArray(values)
    ? values
    : Object.keys(values).filter((k) => typeof values[values[k]] !== "number").map((k) => values[k]);
  return plain({ enum: list }, options);
}

export const Type = {
  Object: Object_,
  String: (o) => plain({ type: "string" }, o),
  Number: (o) => plain({ type: "number" }, o),
  Integer: (o) => plain({ type: "integer" }, o),
  Boolean: (o) => plain({ type: "boolean" }, o),
  Null: (o) => plain({ type: "null" }, o),
  Any: (o) => plain({}, o),
  Unknown: (o) => plain({}, o),
  Array: (items, o) => plain({ type: "array", items }, o),
  Tuple: (items, o) => plain({ type: "array", prefixItems: items, minItems: items.length, maxItems: items.length }, o),
  Record: (_key, value, o) => plain({ type: "object", additionalProperties: value }, o),
  Union: (anyOf, o) => plain({ anyOf }, o),
  Intersect: (allOf, o) => plain({ allOf }, o),
  Literal: (value, o) => {
    const t = literalType(value);
    return plain(t ? { type: t, const: value } : { const: value }, o);
  },
  Enum,
  Optional,
  Readonly: (s) => s,
};

export function StringEnum(values, options) {
  return plain({ type: "string", enum: [...values] }, options);
}

export default Type;
