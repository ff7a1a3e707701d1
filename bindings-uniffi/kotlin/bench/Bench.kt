package dev.throttlekit.bench
fun main() {}
