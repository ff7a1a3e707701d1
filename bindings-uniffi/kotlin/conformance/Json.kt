// A small strict JSON reader for the vectors files (the JVM has none built in, and the runner
// should need nothing beyond the jar's own dependencies). Numbers keep their source text, so
// a strategy spec is handed to core exactly as the file wrote it.
package dev.throttlekit.conformance

/** A JSON number: its source text, and its value as a double. */
data class JsonNumber(val text: String) {
    val value: Double get() = text.toDouble()
    override fun toString() = text
}

class JsonError(message: String) : Exception(message)

/** Parses `text` into maps (insertion-ordered), lists, strings, [JsonNumber]s, booleans and null. */
fun parseJson(text: String): Any? {
    val p = JsonParser(text)
    val v = p.value()
    p.skipSpace()
    if (p.pos != text.length) throw JsonError("trailing characters at ${p.pos}")
    return v
}

/** Writes a parsed value back as JSON text. */
fun toJson(v: Any?): String = buildString { write(v) }

private fun StringBuilder.write(v: Any?) {
    when (v) {
        null -> append("null")
        is Boolean, is JsonNumber -> append(v.toString())
        is String -> {
            append('"')
            for (c in v) {
                when {
                    c == '"' -> append("\\\"")
                    c == '\\' -> append("\\\\")
                    c < ' ' -> append("\\u%04x".format(c.code))
                    else -> append(c)
                }
            }
            append('"')
        }
        is Map<*, *> -> {
            append('{')
            v.entries.forEachIndexed { i, (k, x) ->
                if (i > 0) append(',')
                write(k as String)
                append(':')
                write(x)
            }
            append('}')
        }
        is List<*> -> {
            append('[')
            v.forEachIndexed { i, x ->
                if (i > 0) append(',')
                write(x)
            }
            append(']')
        }
        else -> throw JsonError("cannot write ${v::class}")
    }
}

private class JsonParser(val s: String) {
    var pos = 0

    fun skipSpace() {
        while (pos < s.length && s[pos] in " \t\r\n") pos++
    }

    fun value(): Any? {
        skipSpace()
        if (pos >= s.length) throw JsonError("unexpected end")
        return when (val c = s[pos]) {
            '{' -> obj()
            '[' -> arr()
            '"' -> str()
            't' -> literal("true", true)
            'f' -> literal("false", false)
            'n' -> literal("null", null)
            else -> if (c == '-' || c.isDigit()) num() else throw JsonError("unexpected '$c' at $pos")
        }
    }

    private fun literal(word: String, v: Any?): Any? {
        if (!s.startsWith(word, pos)) throw JsonError("bad literal at $pos")
        pos += word.length
        return v
    }

    private fun num(): JsonNumber {
        val start = pos
        while (pos < s.length && (s[pos].isDigit() || s[pos] in "+-.eE")) pos++
        val text = s.substring(start, pos)
        text.toDoubleOrNull() ?: throw JsonError("bad number '$text' at $start")
        return JsonNumber(text)
    }

    private fun str(): String {
        pos++ // opening quote
        val out = StringBuilder()
        while (true) {
            if (pos >= s.length) throw JsonError("unterminated string")
            val c = s[pos++]
            when (c) {
                '"' -> return out.toString()
                '\\' -> {
                    val e = s[pos++]
                    when (e) {
                        '"', '\\', '/' -> out.append(e)
                        'b' -> out.append('\b')
                        'f' -> out.append('\u000c')
                        'n' -> out.append('\n')
                        'r' -> out.append('\r')
                        't' -> out.append('\t')
                        'u' -> {
                            out.append(s.substring(pos, pos + 4).toInt(16).toChar())
                            pos += 4
                        }
                        else -> throw JsonError("bad escape at $pos")
                    }
                }
                else -> out.append(c)
            }
        }
    }

    private fun obj(): Map<String, Any?> {
        pos++
        val m = LinkedHashMap<String, Any?>()
        skipSpace()
        if (s[pos] == '}') { pos++; return m }
        while (true) {
            skipSpace()
            if (s[pos] != '"') throw JsonError("expected a key at $pos")
            val k = str()
            skipSpace()
            if (s[pos++] != ':') throw JsonError("expected ':' at ${pos - 1}")
            if (m.containsKey(k)) throw JsonError("duplicate key '$k'")
            m[k] = value()
            skipSpace()
            when (s[pos++]) {
                ',' -> continue
                '}' -> return m
                else -> throw JsonError("expected ',' or '}' at ${pos - 1}")
            }
        }
    }

    private fun arr(): List<Any?> {
        pos++
        val l = ArrayList<Any?>()
        skipSpace()
        if (s[pos] == ']') { pos++; return l }
        while (true) {
            l.add(value())
            skipSpace()
            when (s[pos++]) {
                ',' -> continue
                ']' -> return l
                else -> throw JsonError("expected ',' or ']' at ${pos - 1}")
            }
        }
    }
}
