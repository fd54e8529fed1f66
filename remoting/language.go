package remoting

// Language names, as RocketMQ's LanguageCode enum spells them in JSON
// headers.
const (
	LanguageJava   = "JAVA"
	LanguageCPP    = "CPP"
	LanguageDotNet = "DOTNET"
	LanguagePython = "PYTHON"
	LanguageDelphi = "DELPHI"
	LanguageErlang = "ERLANG"
	LanguageRuby   = "RUBY"
	LanguageOther  = "OTHER"
	LanguageHTTP   = "HTTP"
	LanguageGo     = "GO"
	LanguagePHP    = "PHP"
	LanguageOMS    = "OMS"
)

// languageCodes are the byte values of the binary header's language field,
// indexed by code. Frozen: they are LanguageCode's ordinals in RocketMQ.
var languageCodes = [...]string{
	0:  LanguageJava,
	1:  LanguageCPP,
	2:  LanguageDotNet,
	3:  LanguagePython,
	4:  LanguageDelphi,
	5:  LanguageErlang,
	6:  LanguageRuby,
	7:  LanguageOther,
	8:  LanguageHTTP,
	9:  LanguageGo,
	10: LanguagePHP,
	11: LanguageOMS,
}

// languageOtherCode is written for a language the enum does not know, so an
// exotic name never makes a header unencodable.
const languageOtherCode byte = 7

// LanguageCode returns the binary header byte for a language name, OTHER
// (7) for names RocketMQ does not define.
func LanguageCode(name string) byte {
	for i, n := range languageCodes {
		if n == name {
			return byte(i)
		}
	}
	return languageOtherCode
}

// LanguageName returns the name of a binary header language byte, OTHER for
// bytes RocketMQ does not define.
func LanguageName(code byte) string {
	if int(code) < len(languageCodes) {
		return languageCodes[code]
	}
	return LanguageOther
}
