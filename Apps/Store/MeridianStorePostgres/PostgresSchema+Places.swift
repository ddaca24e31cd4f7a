import PersistenceKit

extension PostgresSchema {
  /// Appends the places-directory migration.
  static func appendPlaceMigrations(to migrator: inout Migrator) {
    migrator.append(
      .sql(
        "2026-11-26 places directory",
        places + localizeFieldsSQL(table: "places", fields: ["title", "short_title", "description"])))
  }

  /// Appends the migration for search as on SQLite: `pg_trgm` (created in each database; a trusted extension
  /// of PostgreSQL's contrib) with a trigram index over the title words, which short words (one or two letters,
  /// typing ahead) are matched against; and `search` re-made from the normalized titles (the parser then splits
  /// every word as the query does; keywords and descriptions are re-made as each place is next written).
  static func appendPlaceSearchMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 places search with trigrams", placesTrigrams))
  }

  /// The expression the trigram index covers: every title word preceded by a space.
  static let placeTitleWords = "(' ' || translate(p.title_key, E'\\n', ' '))"

  /// Appends the migration that indexes each place's title lines, for search's exact matches.
  static func appendPlaceTitleLineMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-12-01 place title lines", placeTitleLineIndex))
  }

  /// The index of title lines, and shorter pending lists for the search indexes: a GIN index keeps the rows
  /// written since the last vacuum in a list that every search reads through (up to 4 MB by default; 2 MB of them
  /// cost the exact titles of a 3-letter query 3.8 ms right after a million-place import). The title lines, a few
  /// per place, go straight into their index; the trigrams and words wait in a list of 256 kB.
  static let placeTitleLineIndex = """
    CREATE INDEX places_title_lines ON places USING gin (string_to_array(title_key, E'\\n')) WITH (fastupdate = off);
    ALTER INDEX places_title_words SET (gin_pending_list_limit = 256);
    ALTER INDEX places_search SET (gin_pending_list_limit = 256);
    """

  /// Appends the migration that keeps every place's title words in sequence order, for search's title prefixes.
  static func appendPlaceTitleWordMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-12-01 place title words in sequence order", placeTitleWordTable))
  }

  /// How many characters of a title word `place_title_words` keeps, as its migration writes it (a B-tree entry has
  /// a size limit; a longer query word is then matched through the other indexes).
  static let titleWordLength = 64

  /// `place_title_words`: each place's distinct title words (the folded titles split at spaces and lines, their
  /// first ``titleWordLength`` characters) with its sequence, the key in word then sequence order. A title prefix's
  /// places are then read in sequence order word by word, however late they come: the trigram and word indexes
  /// give their candidates in no order, every one of them read and sorted (60,000 for a subject's first letters
  /// after a million venues, 60 ms). Kept by triggers: a statement's inserted places at once, a place whose
  /// titles change, a deleted place. The triggers come before the stored places are read, so that a place another
  /// node writes meanwhile is counted by one or the other (creating them waits for its transaction).
  static let placeTitleWordTable = """
    CREATE TABLE place_title_words(
      word text COLLATE "C" NOT NULL,
      seq bigint NOT NULL,
      PRIMARY KEY (word, seq)
    );
    CREATE FUNCTION place_title_words_of(title_key text) RETURNS SETOF text LANGUAGE sql IMMUTABLE AS $words$
      SELECT DISTINCT left(word, 64) FROM string_to_table(translate(title_key, E'\\n', ' '), ' ') AS word
      WHERE word <> ''
    $words$;
    CREATE FUNCTION places_title_words_inserted() RETURNS trigger LANGUAGE plpgsql AS $inserted$
    BEGIN
      INSERT INTO place_title_words(word, seq)
        SELECT word, given.seq FROM given, place_title_words_of(given.title_key) AS word ON CONFLICT DO NOTHING;
      RETURN NULL;
    END
    $inserted$;
    CREATE TRIGGER places_title_words_inserted AFTER INSERT ON places REFERENCING NEW TABLE AS given
      FOR EACH STATEMENT EXECUTE FUNCTION places_title_words_inserted();
    CREATE FUNCTION places_title_words_changed() RETURNS trigger LANGUAGE plpgsql AS $changed$
    BEGIN
      IF TG_OP <> 'INSERT' THEN
        DELETE FROM place_title_words WHERE seq = OLD.seq AND word IN (SELECT place_title_words_of(OLD.title_key));
      END IF;
      IF TG_OP <> 'DELETE' THEN
        INSERT INTO place_title_words(word, seq)
          SELECT word, NEW.seq FROM place_title_words_of(NEW.title_key) AS word ON CONFLICT DO NOTHING;
      END IF;
      RETURN NULL;
    END
    $changed$;
    CREATE TRIGGER places_title_words_changed AFTER UPDATE OF title_key ON places
      FOR EACH ROW WHEN (OLD.title_key IS DISTINCT FROM NEW.title_key)
      EXECUTE FUNCTION places_title_words_changed();
    CREATE TRIGGER places_title_words_deleted AFTER DELETE ON places
      FOR EACH ROW EXECUTE FUNCTION places_title_words_changed();
    INSERT INTO place_title_words(word, seq)
      SELECT DISTINCT word, p.seq FROM places p, place_title_words_of(p.title_key) AS word ON CONFLICT DO NOTHING;
    """

  /// The expression `places_title_lines` covers: the lines of a place's folded titles (relevance tier 0 is one of
  /// them equal to the query's words).
  static let placeTitleLines = "string_to_array(p.title_key, E'\\n')"

  static let placesTrigrams = """
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
    CREATE INDEX places_title_words ON places USING gin ((' ' || translate(title_key, E'\\n', ' ')) gin_trgm_ops);
    UPDATE places SET search = setweight(to_tsvector('simple', title_key), 'A') || ts_filter(search, '{B,C}');
    """

  /// As on SQLite: places keep their insertion sequence (`seq`, the last key of every list order), their own and
  /// subtree ratings (changed by the trigger on `place_reviews`, also when an account's reviews go with it) and
  /// their favourite count (a trigger on `place_favourites`); `place_closure` holds every (ancestor, place) pair,
  /// the place itself at depth 0. `search` is a `simple` tsvector of the folded titles (weight A), short titles
  /// and keywords (B) and descriptions (C), in every language; `title_key` the folded titles that rank results;
  /// `city_key` the folded city.
  static let places = """
    CREATE TABLE places(
      seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
      id text PRIMARY KEY,
      parent_id text REFERENCES places(id),
      kind text NOT NULL,
      title text NOT NULL,
      short_title text,
      description text,
      address text,
      city text,
      city_key text,
      site text,
      phone text,
      email text,
      venue_type text,
      logo_url text,
      time_zone text,
      keywords jsonb NOT NULL DEFAULT '[]',
      attributes jsonb NOT NULL DEFAULT '{}',
      latitude double precision,
      longitude double precision,
      title_key text NOT NULL DEFAULT '',
      search tsvector NOT NULL DEFAULT ''::tsvector,
      own_sum bigint NOT NULL DEFAULT 0 CHECK (own_sum >= 0),
      own_count bigint NOT NULL DEFAULT 0 CHECK (own_count >= 0),
      tree_sum bigint NOT NULL DEFAULT 0 CHECK (tree_sum >= own_sum),
      tree_count bigint NOT NULL DEFAULT 0 CHECK (tree_count >= own_count),
      favourites bigint NOT NULL DEFAULT 0 CHECK (favourites >= 0),
      created_at bigint NOT NULL,
      updated_at bigint NOT NULL,
      CHECK ((latitude IS NULL) = (longitude IS NULL))
    );
    CREATE INDEX places_parent ON places(parent_id, seq);
    CREATE INDEX places_city ON places(city_key, kind);
    CREATE INDEX places_kind ON places(kind);
    CREATE INDEX places_position ON places(latitude, longitude) WHERE latitude IS NOT NULL;
    CREATE INDEX places_search ON places USING gin(search);
    CREATE TABLE place_closure(
      place_id text NOT NULL REFERENCES places(id) ON DELETE CASCADE,
      ancestor_id text NOT NULL REFERENCES places(id) ON DELETE CASCADE,
      depth integer NOT NULL CHECK (depth >= 0),
      PRIMARY KEY (place_id, ancestor_id)
    );
    CREATE INDEX place_closure_ancestor ON place_closure(ancestor_id, depth);
    CREATE TABLE place_reviews(
      seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
      id text PRIMARY KEY,
      place_id text NOT NULL REFERENCES places(id) ON DELETE CASCADE,
      author_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      grade integer NOT NULL CHECK (grade BETWEEN 1 AND 5),
      grades jsonb NOT NULL DEFAULT '{}',
      text text NOT NULL DEFAULT '',
      hidden boolean NOT NULL DEFAULT false,
      created_at bigint NOT NULL,
      updated_at bigint NOT NULL,
      UNIQUE (place_id, author_id)
    );
    CREATE INDEX place_reviews_newest ON place_reviews(place_id, hidden, created_at, seq);
    CREATE INDEX place_reviews_author ON place_reviews(author_id);
    CREATE TABLE place_favourites(
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      place_id text NOT NULL REFERENCES places(id) ON DELETE CASCADE,
      seq bigint NOT NULL,
      created_at bigint NOT NULL,
      PRIMARY KEY (user_id, place_id)
    );
    CREATE INDEX place_favourites_newest ON place_favourites(user_id, created_at, seq);
    CREATE INDEX place_favourites_place ON place_favourites(place_id);
    CREATE TABLE place_news(
      seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
      id text PRIMARY KEY,
      place_id text REFERENCES places(id) ON DELETE CASCADE,
      title jsonb NOT NULL,
      body jsonb NOT NULL,
      published_at bigint NOT NULL
    );
    CREATE INDEX place_news_newest ON place_news(published_at, seq);
    CREATE INDEX place_news_place ON place_news(place_id, published_at, seq);
    CREATE FUNCTION place_reviews_rating() RETURNS trigger LANGUAGE plpgsql AS $rating$
    BEGIN
      IF TG_OP IN ('UPDATE', 'DELETE') AND NOT OLD.hidden THEN
        UPDATE places SET own_sum = own_sum - OLD.grade, own_count = own_count - 1 WHERE id = OLD.place_id;
        UPDATE places SET tree_sum = tree_sum - OLD.grade, tree_count = tree_count - 1
          WHERE id IN (SELECT ancestor_id FROM place_closure WHERE place_id = OLD.place_id);
      END IF;
      IF TG_OP IN ('INSERT', 'UPDATE') AND NOT NEW.hidden THEN
        UPDATE places SET tree_sum = tree_sum + NEW.grade, tree_count = tree_count + 1
          WHERE id IN (SELECT ancestor_id FROM place_closure WHERE place_id = NEW.place_id);
        UPDATE places SET own_sum = own_sum + NEW.grade, own_count = own_count + 1 WHERE id = NEW.place_id;
      END IF;
      RETURN NULL;
    END
    $rating$;
    CREATE TRIGGER place_reviews_rating AFTER INSERT OR DELETE OR UPDATE OF grade, hidden, place_id ON place_reviews
      FOR EACH ROW EXECUTE FUNCTION place_reviews_rating();
    CREATE FUNCTION place_favourites_count() RETURNS trigger LANGUAGE plpgsql AS $count$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        UPDATE places SET favourites = favourites + 1 WHERE id = NEW.place_id;
      ELSE
        UPDATE places SET favourites = favourites - 1 WHERE id = OLD.place_id;
      END IF;
      RETURN NULL;
    END
    $count$;
    CREATE TRIGGER place_favourites_count AFTER INSERT OR DELETE ON place_favourites
      FOR EACH ROW EXECUTE FUNCTION place_favourites_count();

    """

  /// Appends the migration for attribute filters in SQL, as on SQLite: `attribute_texts`, the text attributes
  /// folded (the store writes it; for the places stored before, lowercased here — their diacritics are folded as
  /// each place is next written), and the index of the directory's common filter, a passing score within a city.
  static func appendPlaceAttributeMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-29 place attributes in SQL", placeAttributeTexts))
  }

  /// The folded text attributes, and the index whose expression the store's attribute conditions repeat
  /// (`attributes -> 'name'`, compared as `jsonb`).
  static let placeAttributeTexts = """
    ALTER TABLE places ADD COLUMN attribute_texts jsonb NOT NULL DEFAULT '{}';
    UPDATE places SET attribute_texts = (
      SELECT COALESCE(jsonb_object_agg(key, lower(value #>> '{}')), '{}') FROM jsonb_each(places.attributes)
      WHERE jsonb_typeof(value) = 'string'
    ) WHERE attributes <> '{}';
    CREATE INDEX places_passing_score ON places(city_key, (attributes -> 'passingScore'));
    """

  /// Appends the migration that gives news items an image (an uploaded blob's URL), as on SQLite.
  static func appendPlaceNewsImageMigrations(to migrator: inout Migrator) {
    migrator.append(.sql("2026-11-26 place news images", "ALTER TABLE place_news ADD COLUMN image_url text;"))
  }
}
