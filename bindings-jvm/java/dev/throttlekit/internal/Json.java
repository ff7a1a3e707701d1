package dev.throttlekit.internal;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small strict JSON reader and writer: the library sends its options to the native half as
 * JSON (core validates them), and the conformance runner and the servlet filter read JSON. Not
 * public API.
 *
 * <p>Values: {@code Map<String,Object>} (insertion-ordered), {@code List<Object>}, {@code String},
 * {@code Boolean}, {@code null} and {@link Num} (the number's text, so a value written back is
 * the value read).
 */
public final class Json {
    private Json() {}

    /** A JSON number: its text as written, and its value as a double. */
    public record Num(String text) {
        /** The value as a double. */
        public double value() {
            return Double.parseDouble(text);
        }

        /** A number from a long. */
        public static Num of(long v) {
            return new Num(Long.toString(v));
        }

        /** A number from a double (finite; NaN and infinities are written as JSON can't hold them: as null). */
        public static Object of(double v) {
            if (!Double.isFinite(v)) return null;
            if (v == Math.rint(v) && Math.abs(v) < 1e15) return new Num(Long.toString((long) v));
            return new Num(Double.toString(v));
        }
    }

    /** Malformed JSON. */
    public static final class JsonException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        JsonException(String message) {
            super(message);
        }
    }

    /** Parses {@code text} (one value, nothing after it but whitespace). */
    public static Object parse(String text) {
        Json.Parser p = new Json.Parser(text);
        Object v = p.value();
        p.ws();
        if (p.i != text.length()) throw p.error("trailing characters");
        return v;
    }

    /** Writes {@code v} as compact JSON. */
    public static String write(Object v) {
        StringBuilder sb = new StringBuilder();
        write(sb, v);
        return sb.toString();
    }

    private static void write(StringBuilder sb, Object v) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof String s) {
            string(sb, s);
        } else if (v instanceof Boolean b) {
            sb.append(b);
        } else if (v instanceof Num n) {
            sb.append(n.text());
        } else if (v instanceof Long || v instanceof Integer) {
            sb.append(v);
        } else if (v instanceof Double d) {
            write(sb, Num.of(d));
        } else if (v instanceof Map<?, ?> m) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (!first) sb.append(',');
                first = false;
                string(sb, (String) e.getKey());
                sb.append(':');
                write(sb, e.getValue());
            }
            sb.append('}');
        } else if (v instanceof List<?> l) {
            sb.append('[');
            for (int i = 0; i < l.size(); i++) {
                if (i > 0) sb.append(',');
                write(sb, l.get(i));
            }
            sb.append(']');
        } else {
            throw new IllegalArgumentException("not a JSON value: " + v.getClass());
        }
    }

    private static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
                }
            }
        }
        sb.append('"');
    }

    private static final class Parser {
        final String s;
        int i;

        Parser(String s) {
            this.s = s;
        }

        JsonException error(String what) {
            return new JsonException(what + " at offset " + i);
        }

        void ws() {
            while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) i++;
        }

        Object value() {
            ws();
            if (i >= s.length()) throw error("unexpected end");
            char c = s.charAt(i);
            switch (c) {
                case '{':
                    return object();
                case '[':
                    return array();
                case '"':
                    return str();
                case 't':
                    return literal("true", Boolean.TRUE);
                case 'f':
                    return literal("false", Boolean.FALSE);
                case 'n':
                    return literal("null", null);
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) return number();
                    throw error("unexpected '" + c + "'");
            }
        }

        Object literal(String word, Object v) {
            if (!s.startsWith(word, i)) throw error("bad literal");
            i += word.length();
            return v;
        }

        Num number() {
            int start = i;
            if (s.charAt(i) == '-') i++;
            while (i < s.length() && "0123456789.eE+-".indexOf(s.charAt(i)) >= 0) i++;
            String text = s.substring(start, i);
            try {
                Double.parseDouble(text);
            } catch (NumberFormatException e) {
                throw error("bad number " + text);
            }
            return new Num(text);
        }

        String str() {
            i++;
            StringBuilder sb = new StringBuilder();
            while (true) {
                if (i >= s.length()) throw error("unterminated string");
                char c = s.charAt(i++);
                if (c == '"') return sb.toString();
                if (c != '\\') {
                    sb.append(c);
                    continue;
                }
                if (i >= s.length()) throw error("unterminated escape");
                char e = s.charAt(i++);
                switch (e) {
                    case '"', '\\', '/' -> sb.append(e);
                    case 'b' -> sb.append('\b');
                    case 'f' -> sb.append('\f');
                    case 'n' -> sb.append('\n');
                    case 'r' -> sb.append('\r');
                    case 't' -> sb.append('\t');
                    case 'u' -> {
                        if (i + 4 > s.length()) throw error("bad \\u escape");
                        sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                    }
                    default -> throw error("bad escape");
                }
            }
        }

        List<Object> array() {
            i++;
            List<Object> out = new ArrayList<>();
            ws();
            if (i < s.length() && s.charAt(i) == ']') {
                i++;
                return out;
            }
            while (true) {
                out.add(value());
                ws();
                if (i >= s.length()) throw error("unterminated array");
                char c = s.charAt(i++);
                if (c == ']') return out;
                if (c != ',') throw error("expected , or ]");
            }
        }

        Map<String, Object> object() {
            i++;
            Map<String, Object> out = new LinkedHashMap<>();
            ws();
            if (i < s.length() && s.charAt(i) == '}') {
                i++;
                return out;
            }
            while (true) {
                ws();
                if (i >= s.length() || s.charAt(i) != '"') throw error("expected a key");
                String k = str();
                ws();
                if (i >= s.length() || s.charAt(i++) != ':') throw error("expected :");
                if (out.containsKey(k)) throw error("duplicate key " + k);
                out.put(k, value());
                ws();
                if (i >= s.length()) throw error("unterminated object");
                char c = s.charAt(i++);
                if (c == '}') return out;
                if (c != ',') throw error("expected , or }");
            }
        }
    }
}
