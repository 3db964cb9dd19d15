import SatchelCore
import Testing

@Suite("HTMLText")
struct HTMLTextTests {
    @Test("the five characters that end an element or attribute become references; the rest, non-ASCII included, stays")
    func escapes() {
        #expect(HTMLText.escaped(#"<a href="x?a=1&b='2'">é ☕</a>"#) == "&lt;a href=&quot;x?a=1&amp;b=&#39;2&#39;&quot;&gt;é ☕&lt;/a&gt;")
        #expect(HTMLText.escaped("plain text") == "plain text")
        #expect(HTMLText.escaped("&amp;") == "&amp;amp;")
    }
}
