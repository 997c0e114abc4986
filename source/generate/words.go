package generate

// wordList holds the 256 common English words of words(n): one byte of a random number picks one.
var wordList = [256]string{
	"able", "about", "above", "act", "add", "after", "again", "age", "ago", "air", "all", "also",
	"always", "am", "an", "and", "animal", "answer", "any", "appear", "are", "area", "as", "ask",
	"at", "back", "base", "be", "bear", "beat", "became", "because", "been", "before", "began", "begin",
	"behind", "being", "bell", "best", "better", "between", "big", "bird", "black", "blue", "boat", "body",
	"book", "both", "bottom", "box", "boy", "bring", "brought", "build", "built", "busy", "but", "buy",
	"by", "call", "came", "can", "car", "care", "carry", "case", "cat", "cause", "cell", "center",
	"certain", "change", "check", "child", "children", "city", "class", "clear", "close", "cold", "color", "come",
	"common", "complete", "could", "country", "course", "cover", "cross", "cry", "cut", "dark", "day", "deep",
	"did", "differ", "direct", "do", "does", "dog", "done", "door", "down", "draw", "dream", "drive",
	"dry", "during", "each", "early", "earth", "ease", "east", "eat", "edge", "egg", "end", "enough",
	"even", "ever", "every", "eye", "face", "fact", "fall", "family", "far", "farm", "fast", "father",
	"feel", "feet", "few", "field", "fig", "fill", "final", "find", "fine", "fire", "first", "fish",
	"five", "fly", "follow", "food", "foot", "for", "force", "form", "found", "four", "free", "friend",
	"from", "front", "full", "game", "gave", "get", "girl", "give", "go", "gold", "good", "got",
	"govern", "great", "green", "ground", "group", "grow", "had", "half", "hand", "happen", "hard", "has",
	"hat", "have", "he", "head", "hear", "heard", "heat", "help", "her", "here", "high", "him",
	"his", "hold", "home", "horse", "hot", "hour", "house", "how", "hundred", "idea", "if", "in",
	"inch", "is", "island", "it", "just", "keep", "kind", "king", "knew", "know", "lady", "land",
	"large", "last", "late", "laugh", "lay", "lead", "learn", "leave", "left", "leg", "let", "letter",
	"level", "life", "light", "like", "line", "list", "listen", "little", "live", "long", "look", "lost",
	"lot", "love", "low", "machine", "made", "main", "make", "man", "many", "map", "mark", "may",
	"mean", "men", "might", "mile",
}

// firstNames and lastNames make names: "First Last", 64 × 65 combinations from many languages.
var firstNames = []string{
	"Ada", "Alan", "Alice", "Amir", "Ana", "Anna", "Arjun", "Aya", "Ben", "Bruno", "Carla", "Chen",
	"Chloe", "Daniel", "David", "Diego", "Elena", "Emma", "Ethan", "Eva", "Farah", "Felix", "Grace", "Hana",
	"Hugo", "Ines", "Ivan", "Jack", "Jana", "Javier", "Jin", "Julia", "Kai", "Kenji", "Lara", "Leo",
	"Liam", "Lina", "Luca", "Maria", "Mateo", "Maya", "Mei", "Mia", "Nadia", "Noah", "Nora", "Olga",
	"Omar", "Oscar", "Paula", "Priya", "Rafael", "Rosa", "Sara", "Sofia", "Tariq", "Theo", "Uma", "Victor",
	"Wei", "Yara", "Yusuf", "Zoe",
}

var lastNames = []string{
	"Adams", "Ahmed", "Alvarez", "Bauer", "Becker", "Brown", "Chen", "Costa", "Cruz", "Davis", "Diaz", "Dubois",
	"Evans", "Fischer", "Garcia", "Gomez", "Green", "Hall", "Hansen", "Ito", "Jensen", "Jones", "Kato", "Kim",
	"Klein", "Kowalski", "Lee", "Lopez", "Martin", "Meyer", "Miller", "Moore", "Muller", "Nguyen", "Novak", "Park",
	"Patel", "Perez", "Petrov", "Reyes", "Rossi", "Sanchez", "Santos", "Sato", "Schmidt", "Schulz", "Silva", "Singh",
	"Smith", "Suzuki", "Tanaka", "Taylor", "Thomas", "Torres", "Wagner", "Walker", "Wang", "Weber", "White", "Wilson",
	"Wong", "Wu", "Yamamoto", "Young", "Zhang",
}
