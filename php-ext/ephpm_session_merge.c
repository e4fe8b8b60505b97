/*
 * ephpm.session_lock_mode=optimistic: read takes no lock and keeps the data
 * it read (the request's base); write then decodes that and the data to
 * write with the configured session.serialize_handler, finds this
 * request's changes (keys set, changed, unset) and, holding the lock only
 * for that step, re-reads the stored session, applies the changes, writes
 * (set_guarded) and releases. A request that changed nothing writes
 * nothing. Data the serializer cannot decode and re-encode unchanged is
 * locked at read, as in exclusive mode, after a warning.
 *
 * The lock itself is ephpm_session_lock.c's; this file decodes, compares
 * and merges.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "php.h"
#include "ext/session/php_session.h"
#include "ext/standard/php_var.h"
#include "zend_smart_str.h"

#include "php_ephpm.h"
#include "ephpm_session_internal.h"

#define EPHPM_NOT_MERGED "this request's changes are not written"

/* Whether this request is in optimistic mode (ephpm.session_locking on,
 * ephpm.session_lock_mode=optimistic). */
bool ephpm_session_optimistic(void)
{
    return ES(locking) && ES(lock_mode) == EPHPM_LOCK_MODE_OPTIMISTIC;
}

/* Forgets what an optimistic request read. */
void ephpm_session_forget_base(void)
{
    if (ES(base) != NULL) {
        zend_string_release(ES(base));
        ES(base) = NULL;
    }
    if (ES(base_sid) != NULL) {
        zend_string_release(ES(base_sid));
        ES(base_sid) = NULL;
    }
}

static const char *ephpm_serializer_name(void)
{
    return PS(serializer) != NULL ? PS(serializer)->name : "(none)";
}

/* Decodes data with the configured session.serialize_handler into *vars, a
 * new array (the caller frees it). The serializers decode into
 * PS(http_session_vars), and php_serialize also binds a new $_SESSION in the
 * global symbol table: both point at a fresh array during the call and are
 * put back after it, so the request's $_SESSION is untouched. Empty data is
 * an empty array (an empty session is not stored). False, with *vars
 * undefined, if the serializer fails or leaves no array. */
static bool ephpm_session_decode(const zend_string *data, zval *vars)
{
    static const char name[] = "_SESSION";
    const ps_serializer *ser = PS(serializer);
    zval saved_vars, saved_global, fresh, *now, *global;

    ZVAL_UNDEF(vars);
    if (ZSTR_LEN(data) == 0) {
        array_init(vars);
        return true;
    }
    if (ser == NULL || ser->decode == NULL) {
        return false;
    }
    ZVAL_COPY_VALUE(&saved_vars, &PS(http_session_vars));
    global = zend_hash_str_find_ind(&EG(symbol_table), name, sizeof name - 1);
    bool had_global = global != NULL;
    if (had_global) {
        ZVAL_COPY(&saved_global, global);
    }

    array_init(&fresh);
    ZVAL_NEW_REF(&PS(http_session_vars), &fresh);
    zend_result rc = ser->decode(ZSTR_VAL(data), ZSTR_LEN(data));
    now = &PS(http_session_vars);
    if (rc == SUCCESS && Z_ISREF_P(now) && Z_TYPE_P(Z_REFVAL_P(now)) == IS_ARRAY) {
        ZVAL_COPY(vars, Z_REFVAL_P(now));
    }
    zval_ptr_dtor(now);
    ZVAL_COPY_VALUE(&PS(http_session_vars), &saved_vars);

    if (had_global) {
        zend_hash_str_update_ind(&EG(symbol_table), name, sizeof name - 1, &saved_global);
    } else {
        zend_hash_str_del_ind(&EG(symbol_table), name, sizeof name - 1);
    }
    return !Z_ISUNDEF_P(vars) && EG(exception) == NULL;
}

/* Encodes the array vars with the configured session.serialize_handler
 * (which reads PS(http_session_vars), pointed at vars for the call). NULL
 * for what PHP too would store as an empty session. */
static zend_string *ephpm_session_encode(zval *vars)
{
    const ps_serializer *ser = PS(serializer);
    zval saved_vars, ref_to;
    if (ser == NULL || ser->encode == NULL) {
        return NULL;
    }
    ZVAL_COPY_VALUE(&saved_vars, &PS(http_session_vars));
    ZVAL_COPY(&ref_to, vars);
    ZVAL_NEW_REF(&PS(http_session_vars), &ref_to);
    zend_string *out = ser->encode();
    zval_ptr_dtor(&PS(http_session_vars));
    ZVAL_COPY_VALUE(&PS(http_session_vars), &saved_vars);
    return out;
}

/* Whether data decodes and re-encodes to itself: only then can a write of
 * this request be merged without changing what it did not touch. */
static bool ephpm_session_round_trips(const zend_string *data)
{
    zval vars;
    if (ZSTR_LEN(data) == 0) {
        return true;
    }
    if (!ephpm_session_decode(data, &vars)) {
        return false;
    }
    zend_string *again = ephpm_session_encode(&vars);
    zval_ptr_dtor(&vars);
    bool same = again != NULL && zend_string_equals(again, data);
    if (again != NULL) {
        zend_string_release(again);
    }
    return same && EG(exception) == NULL;
}

/* A value serialized on its own, to compare values of any type exactly
 * ("1" and "01", 0 and false, two objects with the same properties of
 * different classes all differ). */
static zend_string *ephpm_serialize_value(zval *value)
{
    smart_str buf = {0};
    php_serialize_data_t hash;
    PHP_VAR_SERIALIZE_INIT(hash);
    php_var_serialize(&buf, value, &hash);
    PHP_VAR_SERIALIZE_DESTROY(hash);
    smart_str_0(&buf);
    return buf.s != NULL ? buf.s : ZSTR_EMPTY_ALLOC();
}

static bool ephpm_session_values_equal(zval *a, zval *b)
{
    ZVAL_DEREF(a);
    ZVAL_DEREF(b);
    if (Z_TYPE_P(a) != Z_TYPE_P(b)) {
        return false;
    }
    if (Z_TYPE_P(a) != IS_ARRAY && Z_TYPE_P(a) != IS_OBJECT) {
        return zend_is_identical(a, b);
    }
    zend_string *sa = ephpm_serialize_value(a), *sb = ephpm_serialize_value(b);
    bool equal = zend_string_equals(sa, sb);
    zend_string_release(sa);
    zend_string_release(sb);
    return equal;
}

static zval *ephpm_hash_find_key(HashTable *ht, zend_string *skey, zend_ulong ikey)
{
    return skey != NULL ? zend_hash_find(ht, skey) : zend_hash_index_find(ht, ikey);
}

/* This request's changes from base to mine: into set (key => new value)
 * the keys set or changed, into unset (key => true) the keys removed. */
static void ephpm_session_changes(HashTable *base, HashTable *mine, zval *set, zval *unset)
{
    zend_string *skey;
    zend_ulong ikey;
    zval *value, *old;

    array_init(set);
    array_init(unset);
    ZEND_HASH_FOREACH_KEY_VAL(mine, ikey, skey, value) {
        old = ephpm_hash_find_key(base, skey, ikey);
        if (old == NULL || !ephpm_session_values_equal(old, value)) {
            zval copy;
            ZVAL_COPY_DEREF(&copy, value);
            if (skey != NULL) {
                zend_hash_update(Z_ARRVAL_P(set), skey, &copy);
            } else {
                zend_hash_index_update(Z_ARRVAL_P(set), ikey, &copy);
            }
        }
    } ZEND_HASH_FOREACH_END();
    ZEND_HASH_FOREACH_KEY(base, ikey, skey) {
        if (ephpm_hash_find_key(mine, skey, ikey) == NULL) {
            if (skey != NULL) {
                add_assoc_bool_ex(unset, ZSTR_VAL(skey), ZSTR_LEN(skey), true);
            } else {
                add_index_bool(unset, ikey, true);
            }
        }
    } ZEND_HASH_FOREACH_END();
}

/* Applies the changes to the array stored (separated first). */
static void ephpm_session_apply(zval *stored, zval *set, zval *unset)
{
    zend_string *skey;
    zend_ulong ikey;
    zval *value;

    SEPARATE_ARRAY(stored);
    ZEND_HASH_FOREACH_KEY_VAL(Z_ARRVAL_P(set), ikey, skey, value) {
        Z_TRY_ADDREF_P(value);
        if (skey != NULL) {
            zend_hash_update(Z_ARRVAL_P(stored), skey, value);
        } else {
            zend_hash_index_update(Z_ARRVAL_P(stored), ikey, value);
        }
    } ZEND_HASH_FOREACH_END();
    ZEND_HASH_FOREACH_KEY(Z_ARRVAL_P(unset), ikey, skey) {
        if (skey != NULL) {
            zend_hash_del(Z_ARRVAL_P(stored), skey);
        } else {
            zend_hash_index_del(Z_ARRVAL_P(stored), ikey);
        }
    } ZEND_HASH_FOREACH_END();
}

/* Optimistic read: the data without the lock, kept as the request's base.
 * SUCCESS or FAILURE as PS_READ returns; EPHPM_READ_LOCK_INSTEAD (nothing
 * kept, *val not set) if the data cannot be merged later, after a warning:
 * the caller then locks as exclusive mode does. Crosses into Go once. */
int ephpm_session_read_optimistic(const ephpm_kv_ops *ops, const ephpm_session_key *data,
                                  const zend_string *sid, zend_string **val)
{
    zend_string *read;
    int rc = ephpm_kv_fetch(ops, data->buf, data->len, &read);
    if (rc == EPHPM_KV_MISS) {
        read = ZSTR_EMPTY_ALLOC();
    } else if (rc != EPHPM_KV_OK) {
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: reading its data failed: %s",
                         ZSTR_VAL(sid), EPHPM_CAUSE(rc));
        return FAILURE;
    }
    if (!ephpm_session_round_trips(read)) {
        zend_string_release(read);
        if (EG(exception) != NULL) {
            return FAILURE;
        }
        php_error_docref(NULL, E_WARNING,
            "ephpm: session %s: session.serialize_handler=%s does not decode and re-encode its data "
            "unchanged, so this request's changes cannot be merged; it holds the session lock as "
            "ephpm.session_lock_mode=exclusive does", ZSTR_VAL(sid), ephpm_serializer_name());
        return EPHPM_READ_LOCK_INSTEAD;
    }
    ES(base_sid) = zend_string_copy((zend_string *)sid);
    ES(base) = zend_string_copy(read);
    *val = read;
    return SUCCESS;
}

/* Optimistic write: this request's changes since its read, merged into the
 * stored session under the lock, which it holds only for this: lock, read,
 * write (set_guarded, or del_guarded for an empty result), release. Writes
 * nothing if nothing changed. Crosses into Go up to four times. */
zend_result ephpm_session_write_merged(const ephpm_kv_ops *ops, const zend_string *sid,
                                       zend_string *val, int64_t ttl_ms)
{
    ephpm_session_key data, lock;
    zend_string *base = ZSTR_EMPTY_ALLOC(), *stored = NULL, *out = NULL;
    zval base_vars, my_vars, stored_vars, set, unset;
    zend_result result = FAILURE;
    int rc;

    if (!DATA_KEY(&data, sid) || !LOCK_KEY(&lock, sid)) {
        return FAILURE;
    }
    /* A session other than the one read (session_regenerate_id()) has no
     * base: all its keys are this request's. */
    if (ES(base_sid) != NULL && zend_string_equals(ES(base_sid), sid)) {
        base = ES(base);
    }
    if (zend_string_equals(base, val)) {
        return SUCCESS;
    }
    ZVAL_UNDEF(&stored_vars);
    ZVAL_UNDEF(&set);
    ZVAL_UNDEF(&unset);
    if (!ephpm_session_decode(base, &base_vars)) {
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: not written, the data read no longer "
                         "decodes with session.serialize_handler=%s", ZSTR_VAL(sid), ephpm_serializer_name());
        return FAILURE;
    }
    if (!ephpm_session_decode(val, &my_vars)) {
        zval_ptr_dtor(&base_vars);
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: not written, its data does not decode "
                         "with session.serialize_handler=%s to be merged", ZSTR_VAL(sid), ephpm_serializer_name());
        return FAILURE;
    }
    ephpm_session_changes(Z_ARRVAL(base_vars), Z_ARRVAL(my_vars), &set, &unset);
    if (zend_hash_num_elements(Z_ARRVAL(set)) == 0 && zend_hash_num_elements(Z_ARRVAL(unset)) == 0) {
        result = SUCCESS; /* only the encoding differs: nothing to write */
        goto done;
    }

    if (!ephpm_session_lock(ops, sid, EPHPM_NOT_MERGED, false, &data, &rc, &stored)) {
        ephpm_session_release(ops); /* a lock whose grant is unknown */
        goto done;
    }
    if (rc == EPHPM_SESSION_NOT_READ) {
        rc = ephpm_kv_fetch(ops, data.buf, data.len, &stored);
    }
    if (rc == EPHPM_KV_MISS) {
        stored = ZSTR_EMPTY_ALLOC();
    } else if (rc != EPHPM_KV_OK) {
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: not written, reading the stored data "
                         "to merge into failed: %s", ZSTR_VAL(sid), EPHPM_CAUSE(rc));
        goto release;
    }
    if (!ephpm_session_decode(stored, &stored_vars)) {
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: not written, the stored data does not "
                         "decode with session.serialize_handler=%s to merge into", ZSTR_VAL(sid),
                         ephpm_serializer_name());
        goto release;
    }
    ephpm_session_apply(&stored_vars, &set, &unset);
    out = ephpm_session_encode(&stored_vars);
    if (EG(exception) != NULL) {
        goto release;
    }
    if (out == NULL || ZSTR_LEN(out) == 0) {
        rc = ephpm_session_remove(ops, &data, &lock);
    } else {
        rc = ephpm_session_write_held(ops, &data, &lock, ZSTR_VAL(out), ZSTR_LEN(out), ttl_ms);
    }
    if (rc == EPHPM_KV_MISS) {
        ephpm_session_warn_lock_lost(sid, "written");
    } else if (rc != EPHPM_KV_OK) {
        php_error_docref(NULL, E_WARNING, "ephpm: session %s: not written: %s",
                         ZSTR_VAL(sid), EPHPM_CAUSE(rc));
    } else {
        /* A later write in this request changes this request's view. */
        ephpm_session_forget_base();
        ES(base_sid) = zend_string_copy((zend_string *)sid);
        ES(base) = zend_string_copy(val);
        result = SUCCESS;
    }
release:
    ephpm_session_release(ops);
done:
    zval_ptr_dtor(&base_vars);
    zval_ptr_dtor(&my_vars);
    zval_ptr_dtor(&stored_vars);
    zval_ptr_dtor(&set);
    zval_ptr_dtor(&unset);
    if (stored != NULL) {
        zend_string_release(stored);
    }
    if (out != NULL) {
        zend_string_release(out);
    }
    return result;
}
