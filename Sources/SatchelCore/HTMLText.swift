/// Text placed into HTML that Satchel writes itself (the status page, the redirect page WebKit gets instead of a
/// redirect it would not follow): the five characters that could end an element or an attribute value become
/// character references.
public enum HTMLText {
    public static func escaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
